"""A child process of the contract's process tests: ``python _child.py MODE BACKEND SPEC OUT``.

``claim``: claim and complete tasks until none is left, write the ids to OUT.
``crash``: journal steps in four concurrent loops until SIGKILLed ("ready" on stdout
once it writes), so the kill lands inside transactions of one and of several writes.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from backends import BACKENDS

from orchestra._types import Message
from orchestra.store import (
    Blackboard,
    Lease,
    NewNote,
    StepResult,
    Writes,
)


async def claim(store: Blackboard, owner: str, out: str) -> None:
    claimed: list[str] = []
    while (task := await store.claim_task(owner, lease_seconds=600)) is not None:
        claimed.append(task.id)
        await store.complete_task(task.id, Lease(owner, task.attempt), {"by": owner},
                                  agent_id=f"{task.run_id}/{task.role}")
    with open(out, "w") as f:
        json.dump(claimed, f)


async def loop(store: Blackboard, run_id: str, index: int, wrote: asyncio.Event) -> None:
    task = await store.claim_task(f"crash-{index}", run_id=run_id, lease_seconds=600)
    assert task is not None
    lease = Lease(f"crash-{index}", task.attempt)
    steps = await store.get_steps(task.id, 0)  # a later round goes on after the last
    step = max((s.step for s in steps if s.status == "completed"), default=0)
    while True:
        step += 1
        tag = f"{task.id}:{step}"
        await store.start_step(task.id, 0, step, "tool", "t", tag, lease)
        writes = Writes(messages=[Message("user", tag + ":q"), Message("assistant", tag + ":a")],
                        notes=[NewNote("note " + tag)] if step % 5 == 0 else [])
        await store.complete_step(StepResult(task.id, 0, step, "tool", "t", tag,
                                             output={"tag": tag, "pad": "x" * 300},
                                             tokens_in=3, tokens_out=4),
                                  lease, agent_id=f"{run_id}/{task.role}", writes=writes)
        wrote.set()


async def crash(store: Blackboard, run_id: str) -> None:
    wrote = asyncio.Event()  # "ready" once a step committed: the kill lands among writes
    loops = [asyncio.create_task(loop(store, run_id, i, wrote)) for i in range(4)]
    await wrote.wait()
    print("ready", flush=True)
    await asyncio.gather(*loops)


async def main(mode: str, backend: str, spec: str, arg: str) -> None:
    store = await BACKENDS[backend].open(spec)
    try:
        await (claim(store, Path(arg).stem, arg) if mode == "claim" else crash(store, arg))
    finally:
        await store.close()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
