"""Ctrl-C in `orchestra worker` serving several runs: exit 130, every run's task handed
back at once, and the message says how many runs stopped and who continues them (it
used to say "the run stopped cleanly", naming none)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from e2e_helpers import StoreWatch, cli, interrupt, kill_group, logs, query, spawn

from orchestra import Coordinator, SQLiteBlackboard
from orchestra.coordinator.pipeline import load_pipeline

pytestmark = pytest.mark.slow

SLOW = "tests.e2e.slow_pipeline:build"
RUNS = 2


async def _pending_runs(db: Path) -> list[str]:
    inp = {"turns": 6, "delay": 0.3}
    async with await SQLiteBlackboard.open(db) as store:
        return [(await Coordinator(store, load_pipeline(SLOW, inp)).start(inp)).id
                for _ in range(RUNS)]


def test_ctrl_c_stops_every_run_a_worker_serves_and_says_so(tmp_path: Path) -> None:
    db, log = tmp_path / "w.db", tmp_path / "worker"
    runs = asyncio.run(_pending_runs(db))
    proc = spawn("worker", "--db", db, log=log)
    try:
        with StoreWatch(db) as watch:  # each run is under way: a step of each completed
            watch.wait("SELECT 1 FROM steps WHERE status = 'completed' GROUP BY task_id "
                       f"HAVING COUNT(*) > 0 LIMIT 1 OFFSET {RUNS - 1}",
                       what="a completed step in every run", proc=proc)
    except BaseException:
        kill_group(proc)
        raise
    assert interrupt(proc) == 130, logs(log)
    err = log.with_suffix(".err").read_text()
    assert (f"interrupted; the worker stopped {RUNS} runs cleanly: another "
            f"`orchestra worker --db {db}`") in err, err
    assert "Traceback" not in err and "Resume with" not in err, err
    # handed back: nothing waits for a lease to lapse before another worker goes on
    assert query(db, "SELECT status, lease_owner FROM tasks") == [("pending", None)] * RUNS
    res = cli("worker", "--db", db, "--idle-exit", "1")
    assert res.code == 0, res
    assert query(db, "SELECT id, status FROM runs ORDER BY id") == [
        (r, "completed") for r in sorted(runs)]
