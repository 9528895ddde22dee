"""``orchestra demo``: the stock pipeline on a bundled spec, with a scripted model.

Registered as the entry point ``orchestra.demo`` (pyproject.toml), which is how the
CLI finds it without importing ``agents``.
"""

from __future__ import annotations

from typing import Any

from orchestra.coordinator.pipeline import Demo

MODEL = "python:agents.demo.director:demo_model"
"""The demo's model spec, recorded in the run's settings like any other."""
NOTICE = ("This demo runs on a SCRIPTED model session shipped with orchestra "
          "(agents/demo/session.jsonl, and the script that recorded it for any "
          "request it lacks): no real model is called. Everything else is real: the "
          "tools write files, pytest really runs, the board really fills.")


def run_input(workspace: str) -> dict[str, Any]:
    """The stock pipeline's input: the bundled spec, built in ``workspace``."""
    from agents.demo.director import spec_text

    return {"spec": spec_text(), "workspace": workspace, "max_rounds": 3, "review": "always"}


DEMO = Demo(pipeline="agents.pipeline:build_pipeline", model=MODEL, run_input=run_input,
            notice=NOTICE)
