"""Which model each role of a run uses: shared by the CLI and the server.

A run records the model specs it was started with (``input["model"]``, and
``input["models"]`` per role), so any process that later serves it (``orchestra
resume``, ``orchestra worker``, ``orchestra serve``) builds the same models.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from orchestra._errors import UserError
from orchestra._store.protocol import Blackboard
from orchestra._types import Run
from orchestra.coordinator.pipeline import Pipeline
from orchestra.models.base import Model

BUDGET_EVENT = "run.budget"
"""Records a token cap raised on resume: it holds for every later process."""


def demo_spec() -> str:
    """The demo's model spec, recorded in the run's input like any other."""
    from agents.demo.director import SESSION

    return f"replay-task:{SESSION}"


def demo_model() -> Model:
    """The shipped session replayed per task; what it lacks, the script that recorded it answers.

    The session holds real pytest reports; another pytest or Python version may word
    them differently, and the demo must still run (and say so) rather than fail.
    """
    from agents.demo.director import SESSION, director_model
    from orchestra.models.record import ReplayModel

    return ReplayModel(SESSION, key="task", name="demo",
                       fallback=director_model())


def split_models(specs: Sequence[str]) -> tuple[str | None, dict[str, str]]:
    """``--model`` values as (default spec, per-role specs), each parsed (a typo fails now)."""
    from orchestra.models.spec import resolve_model_specs

    return resolve_model_specs(None, list(specs), environ={})


def record_models(run_input: Any, specs: Sequence[str]) -> None:
    """Write the run's model specs into its input, so every later process uses the same."""
    default, per_role = split_models(specs)
    if isinstance(run_input, dict):
        if default:
            run_input["model"] = default
        if per_role:
            run_input["models"] = per_role


def models_for_run(pipeline: Pipeline, run_input: Any, cli: Sequence[str]) -> dict[str, Model]:
    """Per-role models: CLI flags, then the run's recorded specs, then $ORCHESTRA_MODEL."""
    from orchestra.models.spec import load_model

    default, per_role = split_models(cli)
    recorded = run_input.get("models", {}) if isinstance(run_input, dict) else {}
    if default is None and isinstance(run_input, dict):
        default = run_input.get("model")
    default = default or os.environ.get("ORCHESTRA_MODEL")
    unknown = set(per_role) - {r.name for r in pipeline.roles}
    if unknown:
        raise UserError(f"--model for unknown role(s) {sorted(unknown)}; roles: "
                        f"{sorted(r.name for r in pipeline.roles)}")
    cache: dict[str, Model] = {}
    out: dict[str, Model] = {}
    for role in pipeline.roles:
        spec = per_role.get(role.name) or recorded.get(role.name) or default
        if spec is None:
            if type(role).model is not None or pipeline.model is not None:
                continue
            raise UserError(f"no model for role {role.name!r}: pass --model SPEC or set "
                            "ORCHESTRA_MODEL (e.g. openai:gpt-4.1-mini, ollama:qwen2.5-coder)")
        if spec not in cache:
            # the shipped session gets its director as fallback (`orchestra resume` too)
            cache[spec] = demo_model() if spec == demo_spec() else load_model(spec)
        out[role.name] = cache[spec]
    return out


async def run_cap(store: Blackboard, run: Run, flag: int | None) -> int | None:
    """The run's token cap: ``--max-tokens`` now (recorded, so it holds for later resumes),
    else the last one recorded, else the one it started with (``input["max_tokens"]``)."""
    if flag is not None:
        await store.append_event(run.id, BUDGET_EVENT, {"max_tokens": flag})
        return flag
    cap = run.input.get("max_tokens") if isinstance(run.input, dict) else None
    after = 0
    while True:
        batch = await store.events(run.id, starting_after=after, limit=500)
        for e in batch:
            if e.kind == BUDGET_EVENT and isinstance(e.data, dict):
                cap = e.data.get("max_tokens")
        if len(batch) < 500:
            break
        after = batch[-1].seq
    return cap if isinstance(cap, int) else None
