"""Where S1's and S2's CPU goes, thread by thread: the profile behind the README's S1/S2 notes.

    python -m benchmarks.profiling.profile_threads [--scenario S1|S2|both]
        [--pipelines 200] [--reps 3]

Runs the orchestra side of the workload (default durability) after a warm-up and
reads each thread's own CPU clock (``pthread_getcpuclockid``), so a thread waiting
for the GIL, a lock or a wake-up costs nothing in its figure. Per step it reports:

* the event loop's CPU (runtime, coordinator, asyncio, the fake model, and building
  and encoding each record: a write is made into its row when it is queued);
* the store writer's thread (aiosqlite's, which runs every write statement): its CPU
  inside the writer's batches' statements (its own CPU clock read before and after
  each one: SQLite, with the GIL released, the ``sqlite3`` module binding parameters,
  aiosqlite's queue) and outside the batches (opening, closing);
* the reader threads' CPU (history, runs and claims read off the writer);
* the cyclic garbage collector's time (``gc.callbacks``);
* the GIL floor: the event loop's Python runs on one core whatever the other threads
  do, so ``loop CPU x steps`` is a floor under S2's makespan that no scheduling can
  beat, and ``makespan / ideal`` cannot fall below it / 0.85 s.

It is measured, not a test; medians over ``--reps`` runs, each on a fresh file.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from benchmarks.measure import S2_LATENCY
from benchmarks.profiling.profile_step import _Timed
from benchmarks.sides import orchestra_side as side
from benchmarks.workload import FakeModel
from orchestra import Coordinator, SQLiteBlackboard
from orchestra.store.sqlite import writer as _writer
from orchestra.store.sqlite.txn import Conn

STEPS_PER_PIPELINE = 17
WARMUP = 5


def _thread_cpu(thread: threading.Thread) -> Callable[[], float]:
    """A reader of the CPU clock of ``thread`` (alive)."""
    assert thread.ident is not None
    clock = time.pthread_getcpuclockid(thread.ident)
    return lambda: time.clock_gettime(clock)


async def _once(scenario: str, pipelines: int, db: Path) -> dict[str, float]:
    latency = S2_LATENCY if scenario == "S2" else 0.0
    before = set(threading.enumerate())
    store = await SQLiteBlackboard.open(db)
    # aiosqlite's threads, in the order the store opened them: the writer's first (the
    # default executor's threads, ``asyncio_N``, checked the file before them)
    store_threads = [t for t in threading.enumerate()
                     if t not in before and not t.name.startswith("asyncio_")]
    coord = Coordinator(store, side.pipeline(side.FakeAdapter(FakeModel(latency))),
                        settings=side._settings())

    async def run_all(n: int) -> None:
        if scenario == "S2":
            await asyncio.gather(*(coord.run({"i": i}) for i in range(n)))
        else:
            for i in range(n):
                await coord.run({"i": i})

    statements: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    in_batches = [0.0]
    gc_time, gc_start = [0.0], [0.0]
    original, original_rows = _writer.run_batch, _writer.run_rows
    writer = _thread_cpu(store_threads[0])
    readers = [_thread_cpu(t) for t in store_threads[1:]]

    def timed(run: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        """``run`` (the writer's ``run_batch`` or ``run_rows``) on a connection whose
        statements are timed on the writer thread's CPU clock. It takes their arguments,
        whatever they are: one it refused would kill the writer's task (and hang the
        tool)."""
        async def timed_run(conn: Conn, *args: Any, **options: Any) -> Any:
            start = writer()
            try:
                return await run(_Timed(conn, statements, writer), *args, **options)
            finally:
                in_batches[0] += writer() - start
        return timed_run

    def on_gc(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            gc_start[0] = time.perf_counter()
        else:
            gc_time[0] += time.perf_counter() - gc_start[0]

    try:
        await run_all(WARMUP)
        _writer.run_batch, _writer.run_rows = timed(original), timed(original_rows)
        gc.callbacks.append(on_gc)
        writer0, loop0, wall0 = writer(), time.thread_time(), time.perf_counter()
        readers0 = sum(r() for r in readers)
        await run_all(pipelines)
        wall = time.perf_counter() - wall0
        loop_cpu, writer_cpu = time.thread_time() - loop0, writer() - writer0
        readers_cpu = sum(r() for r in readers) - readers0
    finally:
        _writer.run_batch, _writer.run_rows = original, original_rows
        if on_gc in gc.callbacks:
            gc.callbacks.remove(on_gc)
        await store.close()
    steps = pipelines * STEPS_PER_PIPELINE
    in_sql = sum(spent for _, spent in statements.values())
    ms = 1e3 / steps
    return {"wall ms/step": wall * ms, "loop CPU": loop_cpu * ms, "writer CPU": writer_cpu * ms,
            "writer in statements": in_sql * ms,
            "writer outside batches": (writer_cpu - in_batches[0]) * ms,
            "readers CPU": readers_cpu * ms, "GC": gc_time[0] * ms, "GIL floor": loop_cpu * ms}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--scenario", choices=("S1", "S2", "both"), default="both")
    p.add_argument("--pipelines", type=int, default=200)
    p.add_argument("--reps", type=int, default=3)
    args = p.parse_args()
    if args.pipelines < 1 or args.reps < 1:
        p.error("--pipelines and --reps must be >= 1")
    for scenario in ("S1", "S2") if args.scenario == "both" else (args.scenario,):
        reps: list[dict[str, float]] = []
        for rep in range(args.reps):
            with tempfile.TemporaryDirectory() as tmp:
                reps.append(asyncio.run(_once(scenario, args.pipelines, Path(tmp) / f"{rep}.db")))
        print(f"{scenario}: {args.pipelines} pipelines, ms per step, median [min-max] of "
              f"{args.reps}")
        for key in reps[0]:
            values = [r[key] for r in reps]
            print(f"  {key:24s} {statistics.median(values):6.3f} "
                  f"[{min(values):.3f}-{max(values):.3f}]")
        if scenario == "S2":
            floor = statistics.median(r["GIL floor"] for r in reps)
            wall = statistics.median(r["wall ms/step"] for r in reps)
            ideal_ms = S2_LATENCY * 1e3 / args.pipelines  # 17 x latency over all steps
            print(f"  makespan/ideal {wall / ideal_ms:.2f}; the GIL floor alone is "
                  f"{floor / ideal_ms:.2f} x ideal")


if __name__ == "__main__":
    main()
