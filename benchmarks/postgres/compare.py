"""S1, S2 and S5 on the PostgreSQL store, beside SQLite and LangGraph's PostgreSQL
checkpointer, all on one local PostgreSQL 16 started for the run.

``python -m benchmarks.postgres [--s1 N] [--s2 N] [--s5-runs R --s5-tasks T] [--reps R]
[--fsync] [--sides sqlite,postgres,langgraph-postgres] [--no-s5] [--drivers STEPS]``

* S1: N pipelines one after another (the workload's 17 model calls each, zero model
  latency): milliseconds per durable step, for orchestra on SQLite (durability
  normal), orchestra on PostgreSQL (``synchronous_commit`` on; ``--fsync`` makes the
  server fsync too) and LangGraph's ``AsyncPostgresSaver`` (durability sync: each
  checkpoint committed before the next step, as orchestra does; and async, its default).
* S2: N pipelines at once with 50 ms model latency: makespan over the ideal.
* S5: ``orchestra worker`` processes (1, 2, 4) serving fan-out runs on one
  PostgreSQL store: tasks/s (``benchmarks.postgres.workers``), CPU-bound (the model
  answers at once) and latency-bound (each task waits 50 ms on its model).
* Round trips per S1 step on PostgreSQL (``benchmarks.postgres.round_trips``): every
  statement, and the step's own writes.
* ``--drivers STEPS``: the same S1-like write loop through asyncpg and psycopg 3
  (``benchmarks.postgres.drivers``).

Medians over ``--reps`` runs, the sides interleaved (order flipped each repetition).
The server is ``LocalPostgres`` (pgserver's binaries, as root run as ``nobody``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from benchmarks import measure
from benchmarks.postgres import drivers as pg_drivers
from benchmarks.postgres import round_trips as pg_round_trips
from benchmarks.postgres import workers as pg_workers
from benchmarks.postgres.local import LocalPostgres
from benchmarks.sides.orchestra_side import FakeAdapter, pipeline
from benchmarks.workload import FakeModel
from orchestra import Coordinator, CoordinatorSettings
from orchestra.store import Blackboard, SQLiteBlackboard
from orchestra.store.postgres import PostgresBlackboard

SIDES = ("sqlite", "postgres", "langgraph-postgres-sync", "langgraph-postgres-async")
METRIC = {"S1": "ms_per_step", "S2": "makespan_over_ideal"}


async def _pipelines(store: Blackboard, n: int, latency: float, concurrent: bool
                     ) -> measure.Metrics:
    coord = Coordinator(store, pipeline(FakeAdapter(FakeModel(latency=latency))),
                        settings=CoordinatorSettings(concurrency=100_000))

    async def run_one(i: int) -> None:
        run = await coord.run({"i": i})
        assert run.status == "completed", run.error

    if concurrent:
        return await measure.concurrent(run_one, n, latency)
    return await measure.sequential(run_one, n)


async def _on(side: str, server: LocalPostgres, tmp: Path, n: int, concurrent: bool
              ) -> measure.Metrics:
    latency = measure.S2_LATENCY if concurrent else 0.0
    if side.startswith("langgraph-postgres-"):
        from benchmarks.postgres import langgraph_saver as pg_langgraph

        dsn = server.create_database("lg" + os.urandom(4).hex())
        return await pg_langgraph.pipelines(dsn, n, side.rsplit("-", 1)[1], latency,
                                            concurrent)
    body: Callable[[Blackboard], Awaitable[measure.Metrics]] = lambda s: _pipelines(  # noqa: E731
        s, n, latency, concurrent)
    if side == "sqlite":
        store: Blackboard = await SQLiteBlackboard.open(tmp / f"{os.urandom(4).hex()}.db")
    else:
        store = await PostgresBlackboard.open(
            server.create_database("b" + os.urandom(4).hex()), pool_size=8)
    try:
        return await body(store)
    finally:
        await store.close()


def scenarios(server: LocalPostgres, sides: list[str], sizes: dict[str, int], reps: int
              ) -> dict[str, dict[str, float]]:
    """Median S1 ms/step and S2 makespan/ideal per side."""
    values: dict[str, dict[str, list[float]]] = {s: {"S1": [], "S2": []} for s in sides}
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(reps):
            for scenario in ("S1", "S2"):
                for side in sides if rep % 2 == 0 else reversed(sides):
                    metrics = asyncio.run(_on(side, server, Path(tmp), sizes[scenario],
                                              scenario == "S2"))
                    values[side][scenario].append(metrics[METRIC[scenario]])
                    print(f"{scenario} rep {rep + 1}: {side} {METRIC[scenario]}="
                          f"{metrics[METRIC[scenario]]:.3g}", file=sys.stderr, flush=True)
    return {side: {f"{sc}_{METRIC[sc]}": statistics.median(v) for sc, v in by.items()}
            for side, by in values.items()}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.postgres", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--s1", type=int, default=100, help="pipelines in S1")
    p.add_argument("--s2", type=int, default=200, help="pipelines in S2")
    p.add_argument("--s5-runs", type=int, default=4, help="fan-out runs per S5 pass")
    p.add_argument("--s5-tasks", type=int, default=250, help="tasks per S5 run")
    p.add_argument("--no-s5", action="store_true", help="skip S5")
    p.add_argument("--drivers", type=int, default=0, metavar="STEPS",
                   help="also compare asyncpg and psycopg 3 over STEPS steps")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--sides", default=",".join(SIDES))
    p.add_argument("--fsync", action="store_true", help="the server fsyncs (off: faster)")
    args = p.parse_args(argv)
    sides = [s.strip() for s in args.sides.split(",") if s.strip()]
    if unknown := set(sides) - set(SIDES):
        raise SystemExit(f"unknown sides {sorted(unknown)}; known: {', '.join(SIDES)}")
    server = LocalPostgres(fsync=args.fsync)
    results: dict[str, Any] = {"fsync": args.fsync, "reps": args.reps, "S1_pipelines": args.s1,
                               "S2_pipelines": args.s2, "load_before": os.getloadavg()}
    try:
        server.start()
        results |= scenarios(server, sides, {"S1": args.s1, "S2": args.s2}, args.reps)
        if "postgres" in sides:  # statements per step (one round trip each)
            results["S1_round_trips"] = asyncio.run(pg_round_trips.per_step(
                server.create_database("rt" + os.urandom(4).hex()), 5))
        if not args.no_s5:
            results["S5_tasks_per_s"] = pg_workers.measure(
                server, [1, 2, 4], args.s5_runs, args.s5_tasks, args.reps)
            results["S5_latency_bound_tasks_per_s"] = pg_workers.measure(
                server, [1, 2, 4], args.s5_runs, args.s5_tasks, args.reps, "latency")
            results["S5_tasks"] = args.s5_runs * args.s5_tasks
        if args.drivers:
            results["driver_ms_per_step"] = pg_drivers.measure(server, args.drivers,
                                                               args.reps)
    finally:
        server.close()
    results["load_after"] = os.getloadavg()
    print(json.dumps(results))


if __name__ == "__main__":
    main()
