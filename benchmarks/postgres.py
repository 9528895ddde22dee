"""S1, S2 and S5 on the PostgreSQL store, beside SQLite, on one local PostgreSQL 16.

``python -m benchmarks.postgres [--s1 N] [--s2 N] [--s5 TASKS] [--reps R] [--fsync]``

* S1: N pipelines one after another (the workload's 17 model calls each, zero model
  latency): milliseconds per durable step, for SQLite (durability normal) and
  PostgreSQL (``synchronous_commit`` on; ``--fsync`` makes the server fsync too).
* S2: N pipelines at once with 50 ms model latency: makespan over the ideal.
* S5: TASKS tasks claimed and completed by 1, 2 and 4 worker processes over TCP:
  tasks per second (the store's throughput, no model).

Medians over ``--reps`` runs. The server is ``LocalPostgres`` (pgserver's binaries).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from benchmarks import measure
from benchmarks.orchestra_side import FakeAdapter, pipeline
from benchmarks.workload import FakeModel
from orchestra import Coordinator, CoordinatorSettings
from orchestra._store import Blackboard, NewTask, SQLiteBlackboard
from orchestra._store.postgres import PostgresBlackboard
from orchestra._store.postgres.local import LocalPostgres

HERE = Path(__file__).parent


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


async def _on(backend: str, server: LocalPostgres, tmp: Path,
              body: Callable[[Blackboard], Awaitable[measure.Metrics]]) -> measure.Metrics:
    if backend == "sqlite":
        store: Blackboard = await SQLiteBlackboard.open(tmp / f"{os.urandom(4).hex()}.db")
    else:
        store = await PostgresBlackboard.open(
            server.create_database("b" + os.urandom(4).hex()), pool_size=8)
    try:
        return await body(store)
    finally:
        await store.close()


def _s5(server: LocalPostgres, tasks: int, workers: int) -> float:
    """Tasks per second of ``workers`` processes draining ``tasks`` tasks."""
    dsn = server.create_database("s5" + os.urandom(4).hex())

    async def setup() -> str:
        async with await PostgresBlackboard.open(dsn) as store:
            run = await store.create_run("s5", {}, tasks=[NewTask("job", {"i": i})
                                                          for i in range(tasks)])
            return run.id

    run_id = asyncio.run(setup())
    env = {**os.environ, "PYTHONPATH": str(HERE.parent)}
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        script = str(HERE.parent / "tests/postgres/_pg_worker.py")
        procs = [subprocess.Popen([sys.executable, script, dsn, run_id, f"w{i}", f"{tmp}/w{i}"],
                                  env=env) for i in range(workers)]
        for proc in procs:
            assert proc.wait() == 0
        return tasks / (time.perf_counter() - start)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--s1", type=int, default=100, help="pipelines in S1")
    p.add_argument("--s2", type=int, default=200, help="pipelines in S2")
    p.add_argument("--s5", type=int, default=4000, help="tasks in S5")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--fsync", action="store_true", help="the server fsyncs (off: faster)")
    args = p.parse_args()
    server = LocalPostgres(fsync=args.fsync)
    results: dict[str, Any] = {"fsync": args.fsync}
    try:
        server.start()
        with tempfile.TemporaryDirectory() as tmp:
            for backend in ("sqlite", "postgres"):
                s1 = [asyncio.run(_on(backend, server, Path(tmp), lambda s: _pipelines(
                    s, args.s1, 0.0, False)))["ms_per_step"] for _ in range(args.reps)]
                s2 = [asyncio.run(_on(backend, server, Path(tmp), lambda s: _pipelines(
                    s, args.s2, measure.S2_LATENCY, True)))["makespan_over_ideal"]
                    for _ in range(args.reps)]
                results[backend] = {"S1_ms_per_step": statistics.median(s1),
                                    "S2_makespan_over_ideal": statistics.median(s2)}
                print(backend, results[backend], flush=True)
        results["S5_tasks_per_s"] = {
            n: statistics.median(_s5(server, args.s5, n) for _ in range(args.reps))
            for n in (1, 2, 4)}
        print("S5", results["S5_tasks_per_s"], flush=True)
    finally:
        server.close()
    print(json.dumps(results))


if __name__ == "__main__":
    main()
