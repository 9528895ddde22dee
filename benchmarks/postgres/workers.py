"""S5 on PostgreSQL: 1, 2 and 4 ``orchestra worker`` processes on one PostgreSQL store.

    python -m benchmarks.postgres.workers [--runs 4] [--tasks 250] [--reps 3] [--workers 1,2,4]
        [--modes cpu,latency]

As ``benchmarks.workers`` (S5 on SQLite): ``--runs`` runs of the fan-out pipeline
(``benchmarks/fanout.py``: three journaled steps and one tool side effect per task)
with ``--tasks`` tasks each, on a fresh database per pass, served by N worker
processes over TCP until every run is done. Reports tasks/s from the first
completion to the last (the workers' start-up is not throughput; the store's clock),
medians of ``--reps``. Every process shares this machine's cores with the server.

Two modes: ``cpu`` (the model answers at once: the store and Python are the bound;
on 2 cores more workers cannot add CPU) and ``latency`` (each model call waits
25 ms, so each task waits 50 ms on its model, as real work does, and each worker
runs one task per run at a time (``--concurrency 1``): one worker on 4 runs
is bound by the waits at 80 tasks/s, so more workers must mean more throughput
until the store or the CPU is the bound).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys

from benchmarks.fanout import build
from benchmarks.workers import serve
from orchestra import Coordinator
from orchestra.store.postgres import PostgresBlackboard
from orchestra.store.postgres.local import LocalPostgres, shared_server

MODES = {"cpu": (0.0, None), "latency": (0.025, 1)}
"""Per mode: seconds each model call waits, and tasks a worker runs at once per run
(None: the CLI's default)."""


async def _create(dsn: str, runs: int, tasks: int, latency: float) -> None:
    run_input = {"tasks": tasks, "model_latency": latency}
    async with await PostgresBlackboard.open(dsn) as store:
        coord = Coordinator(store, build(run_input))
        for _ in range(runs):
            await coord.start(run_input)


async def _rate(dsn: str) -> float:
    import asyncpg

    conn = await asyncpg.connect(dsn)
    try:  # the completion times, on the database's clock, oldest first
        done = await conn.fetch(
            "SELECT updated_at FROM tasks WHERE status = 'completed' ORDER BY updated_at")
        left = await conn.fetchval("SELECT COUNT(*) FROM tasks WHERE status <> 'completed'")
    finally:
        await conn.close()
    times = [r[0] for r in done]
    if left or len(times) < 2:
        raise SystemExit(f"the pass did not finish: {left} tasks not completed")
    return (len(times) - 1) / (times[-1] - times[0])


def one_pass(server: LocalPostgres, workers: int, runs: int, tasks: int,
             timeout: float = 1800.0, mode: str = "cpu") -> float:
    """Tasks per second of ``workers`` worker processes serving a fresh database."""
    dsn = server.create_database("s5" + os.urandom(4).hex())
    latency, concurrency = MODES[mode]
    asyncio.run(_create(dsn, runs, tasks, latency))
    serve(dsn, workers, None, timeout, concurrency)
    return asyncio.run(_rate(dsn))


def measure(server: LocalPostgres, counts: list[int], runs: int, tasks: int,
            reps: int, mode: str = "cpu") -> dict[int, float]:
    """Median tasks/s per worker count, the counts' order flipped each repetition."""
    rates: dict[int, list[float]] = {n: [] for n in counts}
    for rep in range(reps):
        for n in counts if rep % 2 == 0 else reversed(counts):
            rates[n].append(one_pass(server, n, runs, tasks, mode=mode))
            print(f"S5 {mode} rep {rep + 1}: {n} worker(s) {rates[n][-1]:.0f} tasks/s",
                  file=sys.stderr, flush=True)
    return {n: statistics.median(values) for n, values in rates.items()}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.postgres.workers", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=4)
    p.add_argument("--tasks", type=int, default=250, help="tasks per run")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--workers", default="1,2,4")
    p.add_argument("--modes", default="cpu,latency", help=f"of {', '.join(MODES)}")
    args = p.parse_args(argv)
    counts = [int(n) for n in args.workers.split(",")]
    modes = [m for m in args.modes.split(",") if m]
    if unknown := set(modes) - set(MODES):
        raise SystemExit(f"unknown modes {sorted(unknown)}; known: {', '.join(MODES)}")
    print(json.dumps({f"S5_{mode}_tasks_per_s": measure(shared_server(), counts, args.runs,
                                                        args.tasks, args.reps, mode)
                      for mode in modes}))


if __name__ == "__main__":
    main()
