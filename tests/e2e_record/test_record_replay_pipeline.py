"""Record the stock software pipeline's model traffic, then replay it from scratch.

Run A: the stock architect/tester/coder/reviewer pipeline with the scripted demo director
(``agents.demo.director``) wrapped in ``RecordingModel``. Run B: a fresh store and
a fresh workspace, the same pipeline, with ``ReplayModel`` on that recording and a
guard that fails if the director is asked anything. The two runs must leave the
same files, byte for byte, and the same board (ignoring ids and timestamps).
Everything but the model is real: the tools write files and pytest really runs.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from agents.demo.director import director_model, spec_text
from agents.pipeline import build_pipeline
from orchestra import Coordinator, SQLiteBlackboard
from orchestra.models.base import ModelRequest, ModelResponse
from orchestra.models.record import RecordingModel, ReplayModel, read_recording


class CountingModel:
    """Counts the calls reaching the wrapped model (the director)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.calls = 0

    async def request(self, request: ModelRequest) -> ModelResponse:
        self.calls += 1
        response: ModelResponse = await self.inner.request(request)
        return response


def _files(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (pytest/python caches excluded) and its bytes."""
    out: dict[str, bytes] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if any(part in ("__pycache__", ".pytest_cache") for part in rel.parts):
            continue
        if path.is_file():
            out[rel.as_posix()] = path.read_bytes()
    return out


def _role(agent: str) -> str:
    """``run_id/role`` -> ``role`` (authors and senders are agent ids)."""
    return agent.rsplit("/", 1)[-1]


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


async def _board(store: SQLiteBlackboard, run_id: str) -> dict[str, Any]:
    plans = [(_role(p.author), p.version, _canon(p.body)) for p in await store.get_plans(run_id)]
    # a payload's "worked" ("began") is the run's working seconds when it (its round's
    # coder task) was posted: a timestamp
    handoffs = sorted((_role(h.from_agent), h.to_role, _canon(
        {k: v for k, v in h.payload.items() if k not in ("worked", "began")}), h.note)
                      for h in await store.get_handoffs(run_id))
    notes = sorted((_role(n.author), tuple(n.tags), n.body)
                   for n in await store.search_notes(run_id, limit=10_000))
    tasks = Counter((t.role, t.status, _canon(t.result))
                    for t in await store.list_tasks(run_id))
    return {"plans": plans, "handoffs": handoffs, "notes": notes, "tasks": tasks}


async def _run(tmp: Path, name: str, model: Any) -> tuple[str, dict[str, Any], dict[str, bytes]]:
    workspace = tmp / f"ws-{name}"
    workspace.mkdir()
    run_input = {"spec": spec_text(), "workspace": str(workspace), "max_rounds": 3,
                 "review": "always"}
    pipeline = build_pipeline(run_input)
    store = await SQLiteBlackboard.open(tmp / f"{name}.db")
    try:
        run = await Coordinator(store, pipeline,
                                models={r.name: model for r in pipeline.roles}).run(run_input)
        board = await _board(store, run.id)
    finally:
        await store.close()
    return run.status, board, _files(workspace)


async def test_recorded_pipeline_replays_identically(tmp_path: Path) -> None:
    recording = tmp_path / "session.jsonl"
    director = CountingModel(director_model())
    status_a, board_a, files_a = await _run(
        tmp_path, "a", RecordingModel(director, recording, name="director"))
    recorded = len(read_recording(recording))
    assert status_a == "completed"
    assert director.calls == recorded > 0
    # the scripted session really exercised the pipeline: failing tests sent an answer
    # back to the coder, and its fix passed
    assert {"textkit/slugify.py", "textkit/wrap.py", "textkit/stats.py"} <= set(files_a)
    assert any(json.loads(r)["history"] and json.loads(r)["report"]["passed"]
               for role, _, r in board_a["tasks"] if role == "coder")
    assert board_a["plans"] and len(board_a["handoffs"]) >= 4

    before = director.calls
    # strict, keyed on each task's own messages: every request must have been recorded,
    # whatever order the concurrent agents happen to ask in
    replay = ReplayModel(recording, strict=True, key="task")
    status_b, board_b, files_b = await _run(tmp_path, "b", replay)
    assert director.calls == before, "replay must not reach the director"
    assert replay.remaining == 0 and len(replay.calls) == recorded

    assert status_b == status_a
    assert files_b.keys() == files_a.keys()
    for path, data in files_a.items():
        assert files_b[path] == data, f"{path} differs between the runs"
    assert board_b == board_a
