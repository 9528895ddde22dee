"""PostgreSQL restarted mid-run: the store reconnects with backoff and the work goes on;
nothing committed is lost."""

from __future__ import annotations

import asyncio
import threading

import pytest

from benchmarks.postgres.local import LocalPostgres, PostgresUnavailable
from orchestra.store import Lease, NewTask
from orchestra.store.postgres import PostgresBlackboard

TASKS = 60


@pytest.mark.slow
async def test_a_server_restart_mid_run_loses_nothing() -> None:
    try:
        server = LocalPostgres()  # its own server: this test stops it
        server.start()
    except PostgresUnavailable as exc:
        pytest.skip(f"no PostgreSQL server here: {exc}")
    try:
        dsn = server.create_database("restart")
        store = await PostgresBlackboard.open(dsn, reconnect_seconds=120)
        run = await store.create_run("p", {}, tasks=[NewTask("a", {"i": i})
                                                     for i in range(TASKS)])
        done: list[str] = []
        restarting: list[asyncio.Future[None]] = []
        stopped = threading.Event()

        async def work() -> None:
            while (task := await store.claim_task("w", run_id=run.id, lease_seconds=300)):
                await store.complete_task(task.id, Lease("w", task.attempt), {"ok": 1},
                                          agent_id=f"{run.id}/a")
                done.append(task.id)
                if len(done) == TASKS // 3:  # the server goes down while we keep working
                    restarting.append(asyncio.ensure_future(asyncio.to_thread(
                        restart, server, stopped)))
                    # until it is down: the next write finds its connection cut and
                    # reconnects while the server starts again
                    assert await asyncio.to_thread(stopped.wait, 60)

        await asyncio.wait_for(work(), timeout=300)
        await restarting[0]
        counts = await store.task_counts(run.id)
        # a write whose commit the restart cut off is retried; at most that task is
        # left claimed (its lease then expires and another claim takes it)
        assert counts.get("completed", 0) >= TASKS - 1
        assert sum(counts.values()) == TASKS
        events = await store.events(run.id, limit=10_000)
        assert [e.seq for e in events] == list(range(1, len(events) + 1))
        await store.close()
    finally:
        server.close()


def restart(server: LocalPostgres, stopped: threading.Event) -> None:
    server.stop()
    stopped.set()
    server.start()
