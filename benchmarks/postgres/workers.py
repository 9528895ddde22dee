"""S5 on PostgreSQL: 1, 2 and 4 ``orchestra worker`` processes on one PostgreSQL store.

    python -m benchmarks.postgres.workers [--runs 4] [--tasks 250] [--reps 3] [--workers 1,2,4]
        [--modes cpu,latency]

As ``benchmarks.workers`` (S5 on SQLite): ``--runs`` runs of the fan-out pipeline
(``benchmarks/fanout.py``: three journaled steps and one tool side effect per task)
with ``--tasks`` tasks each, on a fresh database per pass, served by N worker
processes over TCP until every run is done. Reports tasks/s from the first
completion to the last (the first worker's start-up is not throughput; the store's
clock), or with ``--all-up`` from the moment every worker made its first claim (the
later workers' start-up, which shares the cores with the first one's work, left out
too), medians of ``--reps``. Every process shares this machine's cores with the server.

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
from typing import NamedTuple

from benchmarks.fanout import build
from benchmarks.postgres.local import LocalPostgres, shared_server
from benchmarks.workers import serve
from orchestra import Coordinator
from orchestra.store.postgres import PostgresBlackboard

MODES = {"cpu": (0.0, None), "latency": (0.025, 1)}
"""Per mode: seconds each model call waits, and tasks a worker runs at once per run
(None: the CLI's default)."""


async def _create(dsn: str, runs: int, tasks: int, latency: float) -> None:
    run_input = {"tasks": tasks, "model_latency": latency}
    async with await PostgresBlackboard.open(dsn) as store:
        coord = Coordinator(store, build(run_input))
        for _ in range(runs):
            await coord.start(run_input)


class Rates(NamedTuple):
    """One pass's throughput: tasks/s from the first completion to the last, and from the
    moment every worker that claimed work had made its first claim (start-up of the
    later workers, which shares the cores with the first one's work, left out)."""

    from_first: float
    all_up: float
    workers_claiming: int


async def _rates(dsn: str) -> Rates:
    import asyncpg

    conn = await asyncpg.connect(dsn)
    try:  # the completion and claim times, on the database's clock, oldest first
        done = await conn.fetch(
            "SELECT updated_at FROM tasks WHERE status = 'completed' ORDER BY updated_at")
        left = await conn.fetchval("SELECT COUNT(*) FROM tasks WHERE status <> 'completed'")
        claims = await conn.fetch("SELECT data::json ->> 'owner', at FROM events "
                                  "WHERE kind = 'task.claimed' ORDER BY at")
    finally:
        await conn.close()
    times = [r[0] for r in done]
    if left or len(times) < 2:
        raise SystemExit(f"the pass did not finish: {left} tasks not completed")
    first_by_process: dict[str, float] = {}
    for owner, at in claims:  # an owner is host:pid:drive
        first_by_process.setdefault(owner.rsplit(":", 2)[1], at)
    up = max(first_by_process.values())
    after = [t for t in times if t >= up]
    all_up = (len(after) - 1) / (after[-1] - after[0]) if len(after) > 1 else float("nan")
    return Rates((len(times) - 1) / (times[-1] - times[0]), all_up, len(first_by_process))


async def _rate(dsn: str) -> float:
    return (await _rates(dsn)).from_first


def one_pass(server: LocalPostgres, workers: int, runs: int, tasks: int,
             timeout: float = 1800.0, mode: str = "cpu") -> Rates:
    """Tasks per second of ``workers`` worker processes serving a fresh database."""
    dsn = server.create_database("s5" + os.urandom(4).hex())
    latency, concurrency = MODES[mode]
    asyncio.run(_create(dsn, runs, tasks, latency))
    serve(dsn, workers, None, timeout, concurrency)
    return asyncio.run(_rates(dsn))


def measure(server: LocalPostgres, counts: list[int], runs: int, tasks: int,
            reps: int, mode: str = "cpu", *, all_up: bool = False) -> dict[int, float]:
    """Median tasks/s per worker count (``all_up``: once every worker claimed), the
    counts' order flipped each repetition."""
    rates: dict[int, list[Rates]] = {n: [] for n in counts}
    for rep in range(reps):
        for n in counts if rep % 2 == 0 else reversed(counts):
            r = one_pass(server, n, runs, tasks, mode=mode)
            rates[n].append(r)
            print(f"S5 {mode} rep {rep + 1}: {n} worker(s) {r.from_first:.0f} tasks/s from "
                  f"the first completion, {r.all_up:.0f} with all {r.workers_claiming} "
                  "claiming workers up", file=sys.stderr, flush=True)
    return {n: statistics.median(r.all_up if all_up else r.from_first for r in values)
            for n, values in rates.items()}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.postgres.workers", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=4)
    p.add_argument("--tasks", type=int, default=250, help="tasks per run")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--workers", default="1,2,4")
    p.add_argument("--modes", default="cpu,latency", help=f"of {', '.join(MODES)}")
    p.add_argument("--all-up", action="store_true",
                   help="tasks/s from the moment every worker made its first claim")
    args = p.parse_args(argv)
    counts = [int(n) for n in args.workers.split(",")]
    modes = [m for m in args.modes.split(",") if m]
    if unknown := set(modes) - set(MODES):
        raise SystemExit(f"unknown modes {sorted(unknown)}; known: {', '.join(MODES)}")
    window = "_all_up" if args.all_up else ""
    print(json.dumps({f"S5_{mode}{window}_tasks_per_s": measure(
        shared_server(), counts, args.runs, args.tasks, args.reps, mode, all_up=args.all_up)
        for mode in modes}))


if __name__ == "__main__":
    main()
