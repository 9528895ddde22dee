"""A run whose only worker died is visibly orphaned: ``runs``, ``show`` and
``events --follow`` say it waits for a worker, and a new worker finishes it."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest
from e2e_helpers import StoreWatch, child_env, cli, cli_argv, kill_group, logs, spawn

from benchmarks.fanout import build
from orchestra import Coordinator, SQLiteBlackboard

pytestmark = pytest.mark.slow


async def create_run(db: Path, run_input: dict[str, object]) -> str:
    async with await SQLiteBlackboard.open(db) as store:
        return (await Coordinator(store, build(run_input)).start(run_input)).id


def test_an_orphaned_run_says_so_until_a_worker_serves_it(tmp_path: Path) -> None:
    import subprocess

    db = tmp_path / "o.db"
    run_id = asyncio.run(create_run(db, {"tasks": 40, "tool_sleep": 0.4}))
    runs = cli("runs", "--db", db)
    assert "pending (waiting for a worker)" in runs.stdout, runs

    worker = spawn("worker", "--db", db, "--run", run_id, "--lease", "1", "--concurrency", "2",
                   log=tmp_path / "worker")
    with StoreWatch(db) as watch:
        watch.wait("SELECT 1 FROM tasks WHERE status = 'completed'", what="a task done",
                   proc=worker, timeout=120)
    assert "running  " in cli("runs", "--db", db, "--active").stdout  # served: plain
    kill_group(worker)
    time.sleep(1.6)  # the lease and the worker's renewal expire

    active = cli("runs", "--db", db, "--active")
    assert f"{run_id}  running (no live worker since " in active.stdout, active
    shown = cli("show", run_id, "--db", db)
    assert "running (no live worker since " in shown.stdout.splitlines()[0], shown
    data = json.loads(cli("show", run_id, "--db", db, "--json").stdout)
    assert data["run"]["orphaned"] is True and data["run"]["no_worker_since"] <= time.time()
    listed = json.loads(cli("runs", "--db", db, "--json").stdout)
    assert [r["orphaned"] for r in listed["runs"]] == [True]

    follow = subprocess.Popen(cli_argv("events", run_id, "--db", db, "--follow"),
                              env=child_env(), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert follow.stderr is not None
        line = follow.stderr.readline()
        assert line.startswith(f"waiting for a worker: run {run_id} is running (no live "
                               "worker since "), line
        assert f"orchestra worker --db {db}" in line
        second = spawn("worker", "--db", db, "--run", run_id, "--lease", "1",
                       log=tmp_path / "worker2")
        assert second.wait(timeout=120) == 0, logs(tmp_path / "worker2")
        out, err = follow.communicate(timeout=60)
    finally:
        if follow.poll() is None:
            follow.kill()
    assert follow.returncode == 0
    assert f"a worker serves run {run_id} again" in err or "run.completed" in out
    assert "run.completed" in out
    data = json.loads(cli("show", run_id, "--db", db, "--json").stdout)
    assert (data["status"], data["run"]["orphaned"]) == ("completed", False)
