"""`orchestra worker` drives only the runs it has work in, not every active run.

Every worker used to drive every active run (a drive loop, heartbeats and a cancel
watch each), so adding workers multiplied the store's load and lowered throughput.
Here five runs are active but four are held by another (live) worker: the worker must
finish the free run and start no drive for the held ones, which a drive would show as
its row in ``run_servers`` (each drive tells the store it serves its run).
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

from benchmarks.scale_pipeline import build
from orchestra import Coordinator, SQLiteBlackboard
from orchestra.cli.main import main

_INPUT = {"until": 0, "latency": [0, 0]}  # one task per run, answered at once


async def _runs(db: Path) -> tuple[str, list[str]]:
    """One run a worker can claim in, and four whose tasks another worker holds."""
    async with await SQLiteBlackboard.open(db) as store:
        ids = [(await Coordinator(store, build(_INPUT)).start(_INPUT)).id for _ in range(5)]
        for run_id in ids[1:]:
            assert await store.claim_task("other", run_id=run_id, lease_seconds=600)
            await store.serve_run(run_id, "other", 600)
    return ids[0], ids[1:]


async def _wait_done(db: Path, run_id: str) -> None:
    async with await SQLiteBlackboard.open(db) as store:
        async with asyncio.timeout(60):
            while True:  # polls another process's progress: no event to wait on
                if (await store.get_run(run_id)).status == "completed":
                    return
                await asyncio.sleep(0.05)


async def _cancel(db: Path, run_ids: list[str]) -> None:
    async with await SQLiteBlackboard.open(db) as store:
        for run_id in run_ids:
            await store.set_run_status(run_id, "cancelled")


def test_a_worker_drives_only_the_run_it_can_claim_in(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    free, held = asyncio.run(_runs(db))
    codes: list[int] = []
    worker = threading.Thread(target=lambda: codes.append(
        main(["worker", "--db", str(db), "--idle-exit", "0.3", "--json"])))
    worker.start()
    try:
        asyncio.run(_wait_done(db, free))
        with sqlite3.connect(db) as conn:
            served = conn.execute("SELECT DISTINCT run_id FROM run_servers "
                                  "WHERE owner != 'other'").fetchall()
        assert served == [(free,)]
        with sqlite3.connect(db) as conn:
            assert conn.execute("SELECT lease_owner FROM tasks WHERE status = 'running' "
                                "ORDER BY lease_owner").fetchall() == [("other",)] * 4
    finally:
        asyncio.run(_cancel(db, held))  # nothing live is left: the worker goes idle
        worker.join(timeout=60)
    assert not worker.is_alive() and codes == [0]
