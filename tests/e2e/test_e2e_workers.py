"""Two `orchestra worker` processes share one store and finish one demo run together,
and no task attempt (and no step) runs twice."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

import pytest
from e2e_helpers import (
    Reference,
    board,
    demo_input,
    event_seqs_gap_free,
    events,
    kill_group,
    logs,
    query,
    show,
    spawn,
    step_rows,
    workspace_files,
)

from agents.demo import MODEL as DEMO_SPEC
from agents.demo.director import demo_model
from agents.pipeline import build_pipeline
from orchestra import Coordinator, SQLiteBlackboard

pytestmark = pytest.mark.slow


async def create_run(db: Path, workspace: Path) -> str:
    """Create the demo's run (and its first task) without driving it."""
    run_input = demo_input(workspace)
    pipeline = build_pipeline(run_input)
    assert run_input["model"] == DEMO_SPEC
    model = demo_model()  # what `orchestra worker` loads for it
    async with await SQLiteBlackboard.open(db) as store:
        coord = Coordinator(store, pipeline, models={r.name: model for r in pipeline.roles})
        run = await coord.start(run_input)
    assert run.status == "pending"
    return run.id


@pytest.mark.parametrize("serve", ["--run", "--idle-exit"])
def test_two_workers_finish_a_run_without_running_any_attempt_twice(
        serve: str, tmp_path: Path, reference: Reference) -> None:
    db, ws = tmp_path / "demo.db", tmp_path / "ws"
    ws.mkdir()
    run_id = asyncio.run(create_run(db, ws))
    assert query(db, "SELECT status, COUNT(*) FROM tasks GROUP BY status") == [("pending", 1)]

    flags = ["--run", run_id] if serve == "--run" else ["--idle-exit", "1.5"]
    workers = [spawn("worker", "--db", db, *flags, log=tmp_path / f"worker{i}")
               for i in range(2)]
    try:
        for i, w in enumerate(workers):
            assert w.wait(timeout=60) == 0, logs(tmp_path / f"worker{i}")
    finally:
        for w in workers:
            if w.poll() is None:
                kill_group(w)
    if serve == "--run":
        for i in range(2):
            assert f"run {run_id}: completed" in logs(tmp_path / f"worker{i}")

    data = show(db, run_id)
    assert data["status"] == "completed", data["run"]["error"]
    assert data["tasks"] == {"completed": 10}

    # each task was claimed once (attempt 1), each claim event is unique, each step ran once
    assert query(db, "SELECT attempt, retries, COUNT(*) FROM tasks GROUP BY attempt, "
                     "retries") == [(1, 0, 10)]
    log = events(db, run_id)
    claims = [(d["task"], d["attempt"]) for _, k, d in log if k == "task.claimed"]
    assert len(claims) == len(set(claims)) == 10
    assert not [k for _, k, _ in log if k == "task.requeued"]
    journal = step_rows(db, run_id)
    assert journal and all(attempts == 1 and status == "completed"
                           for *_, status, attempts in journal)
    started = Counter((d["task"], d["step"]) for _, k, d in log if k == "step.started")
    assert started and max(started.values()) == 1
    assert data["steps"]["reissued"] == 0

    # one run, one ending: the second worker does not finish it again
    run_events = [k for _, k, _ in log if k.startswith("run.")]
    assert run_events == ["run.created", "run.running", "run.completed"]
    event_seqs_gap_free(db, run_id)

    # and the work is the same as one process doing it alone
    assert workspace_files(ws) == reference.files
    assert board(db, run_id) == reference.board
    owners = Counter(d["owner"] for _, k, d in log if k == "task.claimed")
    print(f"claims per worker: {dict(owners)}")
