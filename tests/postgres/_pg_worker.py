"""A worker process of the multi-host test: ``python _pg_worker.py DSN RUN OWNER OUT [HOLD]``.

Claims and completes tasks of RUN until every task is done, requeueing leases that
expired (by the database's clock) when it finds nothing to claim. Each claim is
appended to OUT before the task is worked on. With HOLD=n it completes n tasks,
then claims one more, prints "holding" and hangs holding its lease (to be SIGKILLed).
"""

from __future__ import annotations

import asyncio
import sys

from orchestra.store import Lease
from orchestra.store.postgres import PostgresBlackboard

LEASE_SECONDS = 3.0


async def main(dsn: str, run_id: str, owner: str, out: str, hold: int | None) -> None:
    store = await PostgresBlackboard.open(dsn, pool_size=2)
    done = 0
    with open(out, "a") as log:
        while True:
            task = await store.claim_task(owner, run_id=run_id, lease_seconds=LEASE_SECONDS)
            if task is None:
                counts = await store.task_counts(run_id)
                if set(counts) == {"completed"}:
                    break
                await store.release_leases(run_id)  # expired ones only
                await asyncio.sleep(0.05)
                continue
            log.write(f"{task.id} {task.attempt}\n")
            log.flush()
            if hold is not None and done == hold:
                print("holding", flush=True)
                await asyncio.sleep(3600)
            await store.complete_task(task.id, Lease(owner, task.attempt), {"by": owner},
                                      agent_id=f"{run_id}/{task.role}")
            done += 1
    await store.close()


if __name__ == "__main__":
    hold = int(sys.argv[5]) if len(sys.argv) > 5 else None
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], hold))
