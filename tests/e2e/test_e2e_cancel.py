"""`orchestra cancel` from another process is prompt: running tool calls are cancelled
within a second or so (not at the next heartbeat), their steps are recorded as
cancelled, and an approval of the cancelled run is refused."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest
from e2e_helpers import StoreWatch, cli, kill_group, logs, spawn

from orchestra import SQLiteBlackboard
from orchestra.store import Lease, NewTask

pytestmark = pytest.mark.slow


def test_cancel_from_another_process_stops_a_20_s_tool_at_once(tmp_path: Path) -> None:
    db, effects = tmp_path / "c.db", tmp_path / "effects.txt"
    run_input = json.dumps({"tasks": 3, "tool_sleep": 20, "effects": str(effects)})
    # a 60 s lease: the first heartbeat (which used to notice a cancel) comes after 20 s
    runner = spawn("run", "--db", db, "--pipeline", "benchmarks.fanout:build", "--input",
                   run_input, "--lease", "60", log=tmp_path / "run")
    try:
        with StoreWatch(db) as watch:
            watch.wait("SELECT 1 FROM (SELECT COUNT(*) AS n FROM steps WHERE kind = 'tool' "
                       "AND status = 'started') WHERE n = 3", what="three tools running",
                       proc=runner, timeout=120)
            [(run_id,)] = watch.rows("SELECT id FROM runs")
        cancelled = cli("cancel", run_id, "--db", db)
        assert cancelled.code == 0, cancelled
        asked = time.monotonic()
        code = runner.wait(timeout=60)
        stopped = time.monotonic() - asked
    finally:
        if runner.poll() is None:
            kill_group(runner)
    print(f"the run process stopped {stopped:.2f} s after `orchestra cancel` returned")
    assert code == 5, logs(tmp_path / "run")  # EXIT_CANCELLED
    assert stopped < 8, "the cancel waited for a heartbeat"
    assert not effects.exists()  # no tool call ran to its end
    data = json.loads(cli("show", run_id, "--db", db, "--json").stdout)
    assert data["status"] == "cancelled"
    assert (data["steps"]["cancelled"], data["steps"]["started"]) == (3, 0)
    assert data["tasks"] == {"cancelled": 3}


async def _approval_of_cancelled_run(db: Path) -> str:
    async with await SQLiteBlackboard.open(db) as store:
        run = await store.create_run("p", {}, tasks=[NewTask("ops", {})])
        task = await store.claim_task("w", run_id=run.id)
        assert task is not None
        approval = await store.request_approval(task.id, Lease("w", task.attempt), retry=0,
                                                step=1, tool="deploy", arguments={})
        await store.set_run_status(run.id, "cancelled")
        return approval.id


def test_approving_a_cancelled_run_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "a.db"
    approval_id = asyncio.run(_approval_of_cancelled_run(db))
    for verb in ("approve", "deny"):
        res = cli(verb, approval_id, "--db", db)
        assert res.code == 2, res
        assert "was cancelled" in res.stderr and "start a new run" in res.stderr, res
        assert "resume" not in res.stderr
