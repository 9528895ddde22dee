"""The server's pool spends its slots on runs it can claim work in.

It used to drive the oldest active runs up to its ``workers`` bound, whether or not
another process held their tasks: with one slot and an older run held elsewhere, a
newer free run was never served. Like ``orchestra worker``, the pool now drives runs
with claimable work, and a drive with nothing to claim leaves its run.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from benchmarks.scale_pipeline import build
from orchestra import Coordinator, CoordinatorSettings, SQLiteBlackboard
from orchestra.server.pool import RunPool

_INPUT = {"until": 0, "latency": [0, 0]}  # one task per run, answered at once


async def test_a_pool_with_one_slot_serves_the_free_run_not_the_older_held_one(
        tmp_path: Path) -> None:
    async with await SQLiteBlackboard.open(tmp_path / "runs.db") as store:
        coord = Coordinator(store, build(_INPUT))
        held = (await coord.start(_INPUT)).id  # the oldest: another worker holds its task
        assert await store.claim_task("other", run_id=held, lease_seconds=600)
        await store.serve_run(held, "other", 600)
        free = (await coord.start(_INPUT)).id
        pool = RunPool(store, workers=1, scan_interval=0.05,
                       settings=CoordinatorSettings(shared=True, poll_interval=0.05))
        serving = asyncio.create_task(pool.run())
        try:
            async with asyncio.timeout(30):
                while True:  # the pool's progress: no event to wait on
                    if (await store.get_run(free)).status == "completed":
                        break
                    await asyncio.sleep(0.05)
        finally:
            serving.cancel()
            await asyncio.gather(serving, return_exceptions=True)
            await pool.close()
        [task] = await store.list_tasks(held)
        assert (task.status, task.lease_owner, task.attempt) == ("running", "other", 1)
