"""A worker process for test_multiprocess: claim -> complete until the queue is empty.

Usage: python _claim_worker.py DB OWNER OUT_JSON. Any error (e.g. "database is
locked") propagates and makes the process exit non-zero.
"""

from __future__ import annotations

import asyncio
import json
import sys

from orchestra.store import Lease, SQLiteBlackboard


async def main(path: str, owner: str) -> list[str]:
    claimed: list[str] = []
    async with await SQLiteBlackboard.open(path) as store:
        while (task := await store.claim_task(owner, lease_seconds=600)) is not None:
            claimed.append(task.id)
            await store.complete_task(task.id, Lease(owner, task.attempt), {"by": owner},
                                      agent_id=f"{task.run_id}/{task.role}")
    return claimed


if __name__ == "__main__":
    ids = asyncio.run(main(sys.argv[1], sys.argv[2]))
    with open(sys.argv[3], "w") as f:
        json.dump(ids, f)
