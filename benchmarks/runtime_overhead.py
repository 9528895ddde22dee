"""Issue-3 measurements: runtime overhead per step, and tokens per call as an agent ages.

    python -m benchmarks.runtime_overhead [--steps 600] [--turns 1000] [--reps 3]

(a) One role, one model call per task, tasks chained by a route (so each step is a
whole task: claim, journal, messages, completion). The model is a FunctionModel
returning a fixed string. Reported: microseconds per step for the bare model calls
(floor), for orchestra on a SQLite store in /dev/shm (no disk), and on local disk.
(b) A 1,000-turn agent: tokens sent per model call with ``Summarize`` vs ``KeepAll``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from orchestra import (
    Coordinator,
    FunctionModel,
    KeepAll,
    ModelRequest,
    NewHandoff,
    NewTask,
    Pipeline,
    Role,
    SQLiteBlackboard,
    Summarize,
    Task,
)
from orchestra.compaction import message_tokens
from orchestra.models.base import ModelSettings
from orchestra.store import Writes


class Stepper(Role):
    """You answer."""

    name = "stepper"
    recall = False


def _chain(turns: int, role: Role, model: FunctionModel) -> Pipeline:
    def again(out: Any, task: Task, writes: Writes) -> None:
        if task.input["turn"] < turns:
            writes.handoffs.append(NewHandoff(role.name, {"turn": task.input["turn"] + 1}))

    return Pipeline("chain", roles=[role], start=lambda _: [NewTask(role.name, {"turn": 1})],
                    routes={role.name: again}, model=model)


async def floor(steps: int) -> float:
    model = FunctionModel(lambda req: "ok")
    request = ModelRequest((), settings=ModelSettings())
    t = time.perf_counter()
    for _ in range(steps):
        await model.request(request)
    return (time.perf_counter() - t) / steps * 1e6


async def with_store(steps: int, directory: str) -> float:
    with tempfile.TemporaryDirectory(dir=directory) as tmp:
        store = await SQLiteBlackboard.open(Path(tmp) / "o.db")
        try:
            coord = Coordinator(store, _chain(steps, Stepper(), FunctionModel(lambda r: "ok")))
            t = time.perf_counter()
            run = await coord.run({})
            elapsed = time.perf_counter() - t
            assert run.status == "completed" and run.steps == steps, run
        finally:
            await store.close()
    return elapsed / steps * 1e6


class Talker(Role):
    """You talk."""

    name = "talker"
    recall = False


async def tokens_per_call(turns: int, policy: Any) -> list[int]:
    sent: list[int] = []

    def fn(req: ModelRequest) -> str:
        sent.append(sum(message_tokens(m) for m in req.messages))
        if req.messages[0].content.startswith("You write faithful"):
            return "summary of the conversation so far: " + "s" * 600
        return f"reply to turn {json.loads(req.messages[-1].content)['turn']}: " + "x" * 500

    role = type("T", (Talker,), {"__doc__": "You talk.", "name": "talker",
                                 "compaction": policy})()
    with tempfile.TemporaryDirectory() as tmp:
        store = await SQLiteBlackboard.open(Path(tmp) / "o.db")
        try:
            run = await Coordinator(store, _chain(turns, role, FunctionModel(fn))).run({})
            assert run.status == "completed", run.error
        finally:
            await store.close()
    return sent


async def main(steps: int, turns: int, reps: int) -> None:
    rows: dict[str, list[float]] = {"floor (model calls only)": [],
                                    "orchestra, SQLite in /dev/shm": [],
                                    "orchestra, SQLite on disk": []}
    for _ in range(reps):
        rows["floor (model calls only)"].append(await floor(steps))
        rows["orchestra, SQLite in /dev/shm"].append(await with_store(steps, "/dev/shm"))
        rows["orchestra, SQLite on disk"].append(await with_store(steps, tempfile.gettempdir()))
    print(f"(a) per-step time, {steps} steps, median (min-max) of {reps}:")
    for name, values in rows.items():
        print(f"  {name:<32} {statistics.median(values):8.1f} us "
              f"({min(values):.1f}-{max(values):.1f})")
    print(f"(b) tokens sent per model call over a {turns}-turn agent:")
    for name, policy in (("KeepAll", KeepAll()),
                         ("Summarize(threshold=4000)", Summarize(4000, 1500, 300))):
        sent = await tokens_per_call(turns, policy)
        print(f"  {name:<28} first {sent[0]:>6}  turn {turns // 2}: {sent[turns // 2]:>6}  "
              f"last {sent[-1]:>7}  max {max(sent):>7}  mean {statistics.mean(sent):9.0f}  "
              f"calls {len(sent)}")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--steps", type=int, default=600)
    p.add_argument("--turns", type=int, default=1000)
    p.add_argument("--reps", type=int, default=3)
    a = p.parse_args()
    asyncio.run(main(a.steps, a.turns, a.reps))
