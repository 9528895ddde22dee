"""What one look for work costs a worker, as the store grows (issue 25: scale).

    python -m benchmarks.looks [--stores sqlite,postgres] [--reps 50] [--scale 1]

A worker finds the runs it has work in with one query (``Blackboard.claimable_runs``),
every 0.05-0.2 s while it works, and every worker on the store asks it. Each shape is
made in a fresh store (pending tasks of the fan-out pipeline, ``benchmarks/fanout.py``,
and finished runs), then a look of 64 runs is timed ``--reps`` times through the
store's public API (median, ms): the query as it is, and the one it replaced (every
claimable task grouped by run), run on the same store in the same invocation. On
PostgreSQL the tables are vacuumed and analyzed first, as autovacuum does in a store
that grew to that size (until it does, the live-runs index still lists the runs that
finished since, and a look steps over them).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from benchmarks.fanout import build
from orchestra import Coordinator, SQLiteBlackboard
from orchestra.store import Blackboard

SHAPES = {  # name: (live runs, pending tasks each, finished runs)
    "4 runs x 250 tasks": (4, 250, 0),
    "40 runs x 1000 tasks": (40, 1000, 0),
    "1000 runs x 5 tasks": (1000, 5, 0),
    "20 live runs, 5000 finished": (20, 5, 5000),
}
GROUPED_SQLITE = """
SELECT t.run_id FROM tasks t JOIN runs r ON r.id = t.run_id
WHERE r.status IN ('pending', 'running', 'waiting')
  AND ((t.status = 'pending' AND t.not_before <= ?)
       OR (t.status = 'running' AND t.lease_expires_at < ?))
  AND t.run_id NOT IN (SELECT value FROM json_each(?))
GROUP BY t.run_id ORDER BY MIN(t.created_at) LIMIT ?"""
GROUPED_POSTGRES = """
SELECT t.run_id FROM tasks t JOIN runs r ON r.id = t.run_id
WHERE r.status IN ('pending', 'running', 'waiting')
  AND ((t.status = 'pending' AND t.not_before <= extract(epoch FROM now())::float8)
       OR (t.status = 'running' AND t.lease_expires_at < extract(epoch FROM now())::float8))
  AND NOT (t.run_id = ANY($1::text[]))
GROUP BY t.run_id ORDER BY MIN(t.created_at) LIMIT $2"""


async def _fill(store: Blackboard, live: int, tasks: int, finished: int) -> None:
    run_input = {"tasks": tasks, "model_latency": 0.0}
    coord = Coordinator(store, build(run_input))
    for _ in range(live):
        await coord.start(run_input)
    for _ in range(finished):
        run = await store.create_run("benchmarks.looks", {})
        await store.set_run_status(run.id, "cancelled")


async def _median_ms(look: Callable[[], Awaitable[Any]], reps: int) -> float:
    await look()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        await look()
        times.append((time.perf_counter() - start) * 1000)
    return round(statistics.median(times), 3)


async def _sqlite(shape: tuple[int, int, int], reps: int, workdir: Path) -> dict[str, float]:
    async with await SQLiteBlackboard.open(workdir / f"looks-{time.monotonic_ns()}.db") as store:
        await _fill(store, *shape)

        async def grouped() -> Any:
            now = time.time()
            return await store._read(lambda c: c.execute(GROUPED_SQLITE, (now, now, "[]", 64)))

        served = [build({"tasks": 1}).fingerprint.id]
        return {"now_ms": await _median_ms(lambda: store.claimable_runs(limit=64), reps),
                "versioned_ms": await _median_ms(
                    lambda: store.claimable_runs(limit=64, versions=served), reps),
                "grouped_ms": await _median_ms(grouped, reps)}


async def _postgres(shape: tuple[int, int, int], reps: int) -> dict[str, float]:
    import asyncpg

    from benchmarks.postgres.local import shared_server
    from orchestra.store.postgres import PostgresBlackboard
    from orchestra.store.postgres.servers import _CLAIMABLE as CLAIMABLE_POSTGRES
    from orchestra.store.postgres.versions import _CLAIMABLE as VERSIONED_POSTGRES

    dsn = shared_server().create_database("looks" + os.urandom(4).hex())
    async with await PostgresBlackboard.open(dsn) as store:
        await _fill(store, *shape)
    conn = await asyncpg.connect(dsn)
    try:  # both on one plain connection: the store's pool adds the same to each
        await conn.execute("VACUUM ANALYZE")
        now = await _median_ms(lambda: conn.fetch(CLAIMABLE_POSTGRES, [], 64), reps)
        served = ["", build({"tasks": 1}).fingerprint.id]  # a worker's look (issue 49)
        versioned = await _median_ms(lambda: conn.fetch(VERSIONED_POSTGRES, [], 64, served),
                                     reps)
        grouped = await _median_ms(lambda: conn.fetch(GROUPED_POSTGRES, [], 64), reps)
    finally:
        await conn.close()
    return {"now_ms": now, "versioned_ms": versioned, "grouped_ms": grouped}


async def main_async(stores: list[str], reps: int, scale: float = 1.0) -> dict[str, Any]:
    """Every shape (its counts times ``scale``, at least 1) on every store."""
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for store in stores:
            for name, full in SHAPES.items():
                shape = (max(1, round(full[0] * scale)), max(1, round(full[1] * scale)),
                         round(full[2] * scale))
                figures = (await _sqlite(shape, reps, Path(tmp)) if store == "sqlite"
                           else await _postgres(shape, reps))
                out[f"{store}: {name}"] = figures
                print(f"{store:9} {name:28} a look {figures['now_ms']:7.3f} ms, with the "
                      f"version filter {figures['versioned_ms']:7.3f} ms (grouped by task: "
                      f"{figures['grouped_ms']:7.3f} ms)", flush=True)
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.looks", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--stores", default="sqlite,postgres")
    p.add_argument("--reps", type=int, default=50)
    p.add_argument("--scale", type=float, default=1.0,
                   help="multiply every shape's counts (a quick check: 0.01)")
    args = p.parse_args(argv)
    stores = [s for s in args.stores.split(",") if s]
    if unknown := set(stores) - {"sqlite", "postgres"}:
        p.error(f"unknown stores {sorted(unknown)}; known: sqlite, postgres")
    if args.reps < 1 or args.scale <= 0:
        p.error("--reps wants a number >= 1 and --scale one > 0")
    print(json.dumps(asyncio.run(main_async(stores, args.reps, args.scale))))


if __name__ == "__main__":
    main()
