"""Blackboard write cost: one step-sized transaction, and 200 concurrent writers.

A "step-sized" transaction is what the runtime commits after every model call:
``complete_step`` with the journal row, two messages, the run's totals and the
``step.completed`` event.

    python benchmarks/profiling/store_txn.py [--reps 5] [--seq-ops 2000] [--writers 200]
        [--per-writer 25]

(a) sequential: mean latency of one awaited step transaction, at durability
    "normal" and "full"; (b) concurrent: step transactions committed per second by
    200 writers in one process, with group commit (``max_batch=256``) and with one
    commit per write (``max_batch=1``). Each figure is the median over ``--reps``
    repetitions (min-max in brackets), each on a fresh database file.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from orchestra._types import Durability, Message
from orchestra.store import (
    Lease,
    NewTask,
    SQLiteBlackboard,
    StepResult,
    Writes,
)

TEXT = "x" * 200


async def _setup(
    path: Path, durability: Durability, max_batch: int, tasks: int
) -> tuple[SQLiteBlackboard, str, list[tuple[str, Lease]]]:
    store = await SQLiteBlackboard.open(path, durability=durability, max_batch=max_batch)
    run = await store.create_run("bench", {}, tasks=[NewTask("coder", {})] * tasks)
    leases = []
    for _ in range(tasks):
        task = await store.claim_task("bench", lease_seconds=3600)
        assert task is not None
        leases.append((task.id, Lease("bench", task.attempt)))
    return store, run.id, leases


def _step(task_id: str, step: int) -> tuple[StepResult, Writes]:
    result = StepResult(
        task_id,
        0,
        step,
        "model",
        "fake-model",
        "digest",
        output={"text": TEXT},
        tokens_in=50,
        tokens_out=50,
    )
    writes = Writes(messages=[Message("user", TEXT), Message("assistant", TEXT)])
    return result, writes


async def sequential(durability: Durability, ops: int) -> float:
    """Mean microseconds per awaited step transaction."""
    with tempfile.TemporaryDirectory() as tmp:
        store, run_id, [(task_id, lease)] = await _setup(Path(tmp) / "b.db", durability, 256, 1)
        agent = f"{run_id}/coder"
        for i in range(50):  # warm up: statement cache, page cache
            result, writes = _step(task_id, i)
            await store.complete_step(result, lease, agent_id=agent, writes=writes)
        start = time.perf_counter()
        for i in range(50, 50 + ops):
            result, writes = _step(task_id, i)
            await store.complete_step(result, lease, agent_id=agent, writes=writes)
        elapsed = time.perf_counter() - start
        await store.close()
    return elapsed / ops * 1e6


async def concurrent(
    durability: Durability, max_batch: int, writers: int, per_writer: int
) -> float:
    """Step transactions committed per second by ``writers`` concurrent writers."""
    with tempfile.TemporaryDirectory() as tmp:
        store, run_id, leases = await _setup(Path(tmp) / "b.db", durability, max_batch, writers)
        agent = f"{run_id}/coder"

        async def writer(task_id: str, lease: Lease, first: int, count: int) -> None:
            for i in range(first, first + count):
                result, writes = _step(task_id, i)
                await store.complete_step(result, lease, agent_id=agent, writes=writes)

        await asyncio.gather(*(writer(t, lease, 0, 2) for t, lease in leases))  # warm up
        start = time.perf_counter()
        await asyncio.gather(*(writer(t, lease, 2, per_writer) for t, lease in leases))
        elapsed = time.perf_counter() - start
        await store.close()
    return writers * per_writer / elapsed


def _fmt(values: list[float], unit: str, digits: int = 0) -> str:
    return (
        f"{statistics.median(values):,.{digits}f} {unit} "
        f"[{min(values):,.{digits}f}-{max(values):,.{digits}f}]"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--seq-ops", type=int, default=2000)
    parser.add_argument("--writers", type=int, default=200)
    parser.add_argument("--per-writer", type=int, default=25)
    args = parser.parse_args()
    print(f"SQLite journal_mode=WAL; {args.reps} repetitions; median [min-max]")
    print("(a) one step-sized transaction (complete_step + 2 messages + event), awaited in turn")
    durabilities: tuple[Durability, ...] = ("normal", "full")
    for durability in durabilities:
        runs = [await sequential(durability, args.seq_ops) for _ in range(args.reps)]
        print(
            f"    durability={durability:<6} (synchronous={durability.upper()}): "
            f"{_fmt(runs, 'us/txn', 1)}"
        )
    print(f"(b) {args.writers} concurrent writers x {args.per_writer} step transactions")
    for durability in durabilities:
        group: list[float] = []
        single: list[float] = []
        for _ in range(args.reps):  # interleave the variants: the machine is noisy
            group.append(await concurrent(durability, 256, args.writers, args.per_writer))
            single.append(await concurrent(durability, 1, args.writers, args.per_writer))
        print(f"    durability={durability:<6} group commit:          {_fmt(group, 'txn/s')}")
        print(f"    durability={durability:<6} one commit per write:  {_fmt(single, 'txn/s')}")


if __name__ == "__main__":
    asyncio.run(main())
