"""A writer process for test_crash: journals steps in a tight loop until it is SIGKILLed.

Usage: python _crash_worker.py DB. Prints "ready" once it starts writing. Four
concurrent loops keep the group-commit writer batching, so the kill lands inside
multi-op transactions as well as single ones.
"""

from __future__ import annotations

import asyncio
import sys

from orchestra._types import Message
from orchestra.store import (
    Lease,
    NewNote,
    NewTask,
    SQLiteBlackboard,
    StepResult,
    Writes,
)

LOOPS = 4


async def work(store: SQLiteBlackboard, run_id: str, index: int) -> None:
    task = await store.claim_task(f"crash-{index}", run_id=run_id, lease_seconds=600)
    assert task is not None
    lease = Lease(f"crash-{index}", task.attempt)
    agent = f"{run_id}/coder-{index}"
    step = 0
    while True:
        step += 1
        tag = f"{task.id}:{step}"
        await store.start_step(task.id, 0, step, "model", "m", tag, lease)
        writes = Writes(messages=[Message("user", tag + ":q"), Message("assistant", tag + ":a")],
                        notes=[NewNote("note " + tag)] if step % 5 == 0 else [])
        await store.complete_step(StepResult(task.id, 0, step, "model", "m", tag,
                                             output={"tag": tag, "pad": "x" * 300},
                                             tokens_in=3, tokens_out=4),
                                  lease, agent_id=agent, writes=writes)


async def main(path: str) -> None:
    store = await SQLiteBlackboard.open(path)
    run = await store.create_run("crash", {}, tasks=[NewTask(f"coder-{i}", {})
                                                     for i in range(LOOPS)])
    loops = [asyncio.create_task(work(store, run.id, i)) for i in range(LOOPS)]
    await asyncio.sleep(0.01)
    print("ready", flush=True)
    await asyncio.gather(*loops)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
