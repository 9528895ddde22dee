"""A dead worker's tasks are taken over by the workers still serving, with no resume.

Four ``orchestra worker`` processes serve four runs of 500 tasks on one SQLite file;
one is killed with SIGKILL mid-way. Every run completes, every tool side effect
happened exactly once except those in flight at the kill, and the journal counts
exactly the restarted steps as reissued.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from pathlib import Path

import pytest
from e2e_helpers import StoreWatch, cli, kill_group, logs, query, spawn

from benchmarks.fanout import build
from orchestra import Coordinator, SQLiteBlackboard

pytestmark = pytest.mark.slow

RUNS, TASKS, WORKERS, LEASE = 4, 500, 4, 10.0
# A live worker renews its leases every third of the lease; on 2 cores shared by four
# workers and this test, a worker's writes were seen to wait ~5.5 s for SQLite's write
# lock (its busy handler backs off up to 100 ms a try while the others commit), which
# a 4 s lease took for a death. The lease must outlast such a stall: that is what it is for.


async def create_runs(db: Path, effects: Path) -> list[str]:
    run_input = {"tasks": TASKS, "effects": str(effects)}
    async with await SQLiteBlackboard.open(db) as store:
        coord = Coordinator(store, build(run_input))
        return [(await coord.start(run_input)).id for _ in range(RUNS)]


def test_workers_take_over_a_killed_workers_tasks(tmp_path: Path) -> None:
    db, effects = tmp_path / "w.db", tmp_path / "effects.txt"
    run_ids = asyncio.run(create_runs(db, effects))
    workers = [spawn("worker", "--db", db, "--idle-exit", "2", "--lease", LEASE,
                     log=tmp_path / f"worker{i}") for i in range(WORKERS)]
    by_pid = {w.pid: w for w in workers}
    try:
        with StoreWatch(db) as watch:
            # mid-way: a third of the work done, then kill the worker holding most leases
            for w in workers:  # every worker is up and working
                watch.wait("SELECT 1 FROM events WHERE kind = 'task.claimed' "
                           "AND json_extract(data, '$.owner') LIKE ?", (f"%:{w.pid}:%",),
                           what=f"worker {w.pid} claims", proc=w, timeout=120)
            watch.wait("SELECT 1 FROM (SELECT COUNT(*) AS n FROM tasks WHERE status = 'completed') "
                       "WHERE n >= ?",
                       (RUNS * TASKS // 3,), what="a third of the tasks done", proc=workers[0],
                       timeout=240)
            held = Counter(owner for (owner,) in watch.rows(
                "SELECT lease_owner FROM tasks WHERE status = 'running'"))
            # an owner id is host:pid:nonce (a worker has one per run it serves)
            victim = int(max(held, key=lambda o: held[o]).split(":")[1])
            kill_group(by_pid[victim])
            killed_at = time.time()
        for w in workers:
            if w.pid != victim:
                assert w.wait(timeout=300) == 0, logs(tmp_path / f"worker{workers.index(w)}")
    finally:
        for w in workers:
            if w.poll() is None:
                kill_group(w)

    # every run completed, with no resume
    assert query(db, "SELECT status, COUNT(*) FROM runs GROUP BY status") == [("completed", RUNS)]
    assert query(db, "SELECT status, COUNT(*) FROM tasks GROUP BY status") == [
        ("completed", RUNS * TASKS)]
    # the victim's tasks were taken over after their leases expired, attempt counted
    taken = [(json.loads(d), at) for d, at in query(
        db, "SELECT data, at FROM events WHERE kind = 'task.requeued'")]
    assert taken and all(int(d["owner"].split(":")[1]) == victim
                         and d["cause"] == "lease expired" for d, _ in taken)
    victim_tasks = {d["task"] for d, _ in taken}
    first = min(at for _, at in taken)
    print(f"victim held {len(victim_tasks)} tasks; first taken over {first - killed_at:.2f} s "
          f"after the kill (lease {LEASE} s)")
    assert first - killed_at < 60
    # no task attempt was claimed twice
    claims = [(d["task"], d["attempt"]) for (d,) in
              ((json.loads(r[0]),) for r in query(
                  db, "SELECT data FROM events WHERE kind = 'task.claimed'"))]
    assert len(claims) == len(set(claims))

    # every side effect exactly once, except those in flight at the kill (at most twice)
    keys = Counter(effects.read_text().split())
    assert len(keys) == RUNS * TASKS
    twice = {k for k, n in keys.items() if n > 1}
    assert all(keys[k] == 2 and k.split(":")[1] in victim_tasks for k in twice)
    # tool steps are journaled as started before they run: a repeated effect is a
    # counted reissue, and a reissue that is not a repeated effect had not reached it
    [(tool_reissued, model_reissued, retried)] = query(
        db, "SELECT SUM(CASE WHEN kind = 'tool' THEN attempts - 1 END), "
            "SUM(CASE WHEN kind = 'model' THEN attempts - 1 END), SUM(retry > 0) FROM steps")
    assert len(twice) <= tool_reissued <= len(victim_tasks)
    assert retried == 0
    reissued = sum(json.loads(cli("show", r, "--db", db, "--json").stdout)["steps"]["reissued"]
                   for r in run_ids)
    assert reissued == tool_reissued + model_reissued <= len(victim_tasks)
    print(f"effects run twice {len(twice)}; reissued tool {tool_reissued} "
          f"model {model_reissued}")


@pytest.mark.parametrize("lease", ["0", "-3", "nan"])
def test_a_bad_lease_is_refused_in_one_line(tmp_path: Path, lease: str) -> None:
    res = cli("worker", "--db", tmp_path / "none.db", "--lease", lease)
    assert res.code == 2 and "--lease must be between" in res.stderr, res
    assert "Traceback" not in res.stderr
