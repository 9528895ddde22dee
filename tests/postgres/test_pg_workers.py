"""Workers on several "hosts" (processes over TCP to 127.0.0.1) share one PostgreSQL store:
every task is done exactly once, no task is claimed twice, none is lost, and the tasks a
SIGKILLed worker held are taken over by the others once their leases expire (by the
database's clock), with no resume."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from orchestra.store import NewTask
from orchestra.store.postgres import PostgresBlackboard

HERE = Path(__file__).parent
WORKERS = 4
TASKS = int(os.environ.get("ORCHESTRA_PG_TASKS", "200"))  # the full size: 10000
LEASE_SECONDS = 3.0  # _pg_worker.LEASE_SECONDS


def worker(dsn: str, run_id: str, owner: str, out: Path, *hold: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(HERE.parents[1]), os.environ.get("PYTHONPATH", "")])}
    return subprocess.Popen([sys.executable, str(HERE / "_pg_worker.py"), dsn, run_id, owner,
                             str(out), *hold], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


@pytest.mark.slow
async def test_workers_share_tasks_exactly_once_and_take_over_a_killed_ones(
        dsn: str, tmp_path: Path) -> None:
    store = await PostgresBlackboard.open(dsn)
    try:
        run = await store.create_run("multi-host", {}, tasks=[
            NewTask("job", {"i": i}) for i in range(TASKS)])
        victim = worker(dsn, run.id, "victim", tmp_path / "victim", "5")
        assert victim.stdout is not None
        line = victim.stdout.readline()
        assert line == "holding\n", (line, victim.stderr.read() if victim.stderr else "")
        others = [worker(dsn, run.id, f"w{i}", tmp_path / f"w{i}") for i in range(WORKERS - 1)]
        os.kill(victim.pid, signal.SIGKILL)  # mid-run, holding a live lease
        victim.wait(timeout=30)
        for proc in others:
            _, stderr = proc.communicate(timeout=600)
            assert proc.returncode == 0, stderr

        claims = [tuple(line.split()) for path in tmp_path.iterdir()
                  for line in path.read_text().splitlines()]
        assert len(claims) == len(set(claims)) == TASKS + 1  # one task was claimed twice...
        held = [task for task, attempt in claims if attempt == "2"]
        assert len(held) == 1  # ...the one the victim held, at its next attempt
        tasks = await store.list_tasks(run.id)
        assert {t.status for t in tasks} == {"completed"} and len(tasks) == TASKS
        assert {t.id: t.attempt for t in tasks if t.attempt != 1} == {held[0]: 2}

        events = await store.events(run.id, limit=10 * TASKS)
        assert [e.seq for e in events] == list(range(1, len(events) + 1))
        completed = Counter(e.data["task"] for e in events if e.kind == "task.completed")
        assert len(completed) == TASKS and set(completed.values()) == {1}  # 0 lost, 0 twice
        claimed = Counter((e.data["task"], e.data["attempt"]) for e in events
                          if e.kind == "task.claimed")
        assert set(claimed.values()) == {1}  # no (task, attempt) claimed by two workers
        [requeued] = [e for e in events if e.kind == "task.requeued"]
        # taken over by a claim (or released by a worker's release_leases)
        assert {k: v for k, v in requeued.data.items() if k != "cause"} == {
            "task": held[0], "role": "job", "attempt": 1, "owner": "victim"}
        assert requeued.data.get("cause", "lease expired") == "lease expired"
        [first_claim] = [e for e in events if e.kind == "task.claimed"
                         and e.data["task"] == held[0] and e.data["attempt"] == 1]
        assert requeued.at - first_claim.at >= LEASE_SECONDS  # only after the lease expired
        assert first_claim.data["owner"] == "victim"
    finally:
        await store.close()
