"""Opt-in: the stock software pipeline against a real (weak, 0.5B) llama.cpp model.

Run with ``ORCHESTRA_LLAMA_URL=http://127.0.0.1:8080/v1 pytest -n 0 -m llama
tests/models/test_llama_pipeline.py`` (``bash shared/tools/llama-server.sh 8080``
starts a server). The model writes tool calls as text, invents tools, loops and
may approve bad code; whatever it writes, the run must end (completed, or failed
with a reason) within the time limit and leave a consistent store. It may well
fail: this test is about the framework coping, not about the model succeeding.
``ORCHESTRA_LLAMA_PIPELINE_LIMIT`` overrides the time limit in seconds;
``ORCHESTRA_LLAMA_RECORD=FILE`` records the model's traffic (``RecordingModel``).
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from agents.pipeline import build_pipeline
from orchestra import Coordinator, SQLiteBlackboard
from orchestra.models.base import ModelRequest, ModelResponse, ModelSettings
from orchestra.models.openai import OpenAIModel
from orchestra.models.record import RecordingModel

pytestmark = [
    pytest.mark.llama,
    pytest.mark.skipif(not os.environ.get("ORCHESTRA_LLAMA_URL"),
                       reason="set ORCHESTRA_LLAMA_URL to a llama.cpp server's /v1 URL"),
]

SPEC = """# calc — one tiny module

Build `calc/add.py` with one function:

`add(a: int, b: int) -> int` returns the sum of `a` and `b`.

Write its pytest file `tests/test_add.py` with two tests: `add(1, 2) == 3` and `add(-1, 1) == 0`.
Only this one module. Standard library only.
"""

TERMINAL = {"completed", "failed", "cancelled"}
# with this seed Qwen2.5-Coder-0.5B (Q4_K_M) gets a plan through to the coder
SETTINGS = ModelSettings(temperature=0.5, max_tokens=768, seed=14)


class Bounded:
    """The server's model with bounded replies: a looping 0.5B model otherwise writes
    until its context is full (minutes per call at a few tokens a second)."""

    def __init__(self, inner: OpenAIModel) -> None:
        self.inner, self.name = inner, inner.name
        self.calls = 0

    async def request(self, request: ModelRequest) -> ModelResponse:
        self.calls += 1
        return await self.inner.request(replace(request, settings=SETTINGS))


def _cli(db: Path, *args: str) -> str:
    """Run ``orchestra ARGS --db DB`` and return its stdout (it must exit cleanly)."""
    proc = subprocess.run([sys.executable, "-m", "orchestra.cli.main", *args, "--db", str(db)],
                          capture_output=True, text=True, timeout=60, check=False)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode in (0, 1), (proc.returncode, proc.stderr)
    return proc.stdout


async def test_stock_pipeline_terminates_consistently(tmp_path: Path) -> None:
    limit = float(os.environ.get("ORCHESTRA_LLAMA_PIPELINE_LIMIT", "1800"))
    server = OpenAIModel("local", base_url=os.environ["ORCHESTRA_LLAMA_URL"], timeout=300,
                         max_retries=1)
    model = Bounded(server)
    record = os.environ.get("ORCHESTRA_LLAMA_RECORD")
    used = RecordingModel(model, record) if record else model
    workspace = tmp_path / "ws"
    workspace.mkdir()
    run_input = {"spec": SPEC, "workspace": str(workspace), "max_rounds": 2}
    pipeline = build_pipeline(run_input)
    db = tmp_path / "o.db"
    store = await SQLiteBlackboard.open(db)
    started = time.monotonic()
    try:
        coordinator = Coordinator(store, pipeline, models={r.name: used for r in pipeline.roles})
        run = await coordinator.start(run_input)
        final = await asyncio.wait_for(coordinator.drive(run.id), limit)
        elapsed = time.monotonic() - started
        tasks = await store.list_tasks(run.id)
        events = await store.events(run.id, limit=1_000_000)
        final = await store.get_run(run.id)
    finally:
        await store.close()
        await server.aclose()

    print(f"\nrun {final.id}: {final.status} in {elapsed:.0f} s, {final.steps} steps, "
          f"{model.calls} model calls, {final.tokens_in}+{final.tokens_out} tokens, "
          f"error={final.error!r}")
    assert final.status in ("completed", "failed")
    if final.status == "failed":
        assert final.error
    assert tasks and all(t.status in TERMINAL for t in tasks), [
        (t.role, t.status) for t in tasks]
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert events[-1].kind == f"run.{final.status}"
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []

    # the inspection commands read the store without a crash
    shown = json.loads(_cli(db, "show", final.id, "--json"))
    assert shown["status"] == final.status
    json.loads(_cli(db, "board", final.id, "--json"))
    assert _cli(db, "events", final.id).strip()
