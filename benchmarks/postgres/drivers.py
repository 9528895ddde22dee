"""asyncpg or psycopg 3: the same S1-like write loop through each async driver.

    python -m benchmarks.postgres.drivers [--steps 2000] [--reps 3]

Each step is what orchestra's PostgreSQL store commits per journaled step, reduced to
its round trips: one transaction that reads the database's clock, bumps the run's
counters (``RETURNING`` the event seq), inserts the step's journal row and inserts its
event (four statements, ~1 KB of payload). One connection, one step after another,
statements prepared (asyncpg caches them; psycopg prepares after
``prepare_threshold`` uses, set to 1 here). Reports milliseconds per step, medians of
``--reps`` (drivers interleaved, the order flipped each repetition).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time
from collections.abc import Awaitable, Callable

from benchmarks.postgres.local import LocalPostgres, shared_server

SCHEMA = """
CREATE TABLE runs (id text PRIMARY KEY, last_seq bigint NOT NULL, steps bigint NOT NULL);
CREATE TABLE steps (run_id text NOT NULL, step bigint NOT NULL, output text NOT NULL,
                    finished_at double precision NOT NULL, PRIMARY KEY (run_id, step));
CREATE TABLE events (run_id text NOT NULL, seq bigint NOT NULL, kind text NOT NULL,
                     data text NOT NULL, at double precision NOT NULL,
                     PRIMARY KEY (run_id, seq));
INSERT INTO runs VALUES ('r', 0, 0);
"""
NOW = "SELECT extract(epoch FROM now())::float8"
BUMP = "UPDATE runs SET last_seq = last_seq + 1, steps = steps + 1 WHERE id = $1 RETURNING last_seq"
STEP = "INSERT INTO steps VALUES ($1, $2, $3, $4)"
EVENT = "INSERT INTO events VALUES ($1, $2, $3, $4, $5)"
OUTPUT = json.dumps({"text": "x" * 900, "calls": []})
DATA = json.dumps({"task": "t" * 16, "step": 1, "kind": "model", "name": "model"})

Loop = Callable[[str, int], Awaitable[float]]


async def asyncpg_loop(dsn: str, steps: int) -> float:
    import asyncpg

    conn = await asyncpg.connect(dsn)
    try:
        start = time.perf_counter()
        for _ in range(steps):
            async with conn.transaction():
                now = await conn.fetchval(NOW)
                seq = await conn.fetchval(BUMP, "r")
                await conn.execute(STEP, "r", seq, OUTPUT, now)
                await conn.execute(EVENT, "r", seq, "step.completed", DATA, now)
        return (time.perf_counter() - start) * 1000 / steps
    finally:
        await conn.close()


def _psycopg(sql: str) -> str:
    for i in range(5, 0, -1):
        sql = sql.replace(f"${i}", "%s")
    return sql


async def psycopg_loop(dsn: str, steps: int) -> float:
    import psycopg

    bump, step, event = _psycopg(BUMP), _psycopg(STEP), _psycopg(EVENT)
    conn = await psycopg.AsyncConnection.connect(dsn, autocommit=True, prepare_threshold=1)
    try:
        start = time.perf_counter()
        for _ in range(steps):
            async with conn.transaction():
                now = (await (await conn.execute(NOW)).fetchone())[0]  # type: ignore[index]
                seq = (await (await conn.execute(bump, ("r",))).fetchone())[0]  # type: ignore[index]
                await conn.execute(step, ("r", seq, OUTPUT, now))
                await conn.execute(event, ("r", seq, "step.completed", DATA, now))
        return (time.perf_counter() - start) * 1000 / steps
    finally:
        await conn.close()


DRIVERS: dict[str, Loop] = {"asyncpg": asyncpg_loop, "psycopg": psycopg_loop}


def measure(server: LocalPostgres, steps: int, reps: int) -> dict[str, float]:
    """Median ms per step of each driver, each repetition on a fresh database."""
    import asyncpg

    times: dict[str, list[float]] = {name: [] for name in DRIVERS}
    for rep in range(reps):
        order = list(DRIVERS) if rep % 2 == 0 else list(reversed(DRIVERS))
        for name in order:
            dsn = server.create_database("d" + os.urandom(4).hex())

            async def one(dsn: str = dsn, name: str = name) -> float:
                conn = await asyncpg.connect(dsn)
                await conn.execute(SCHEMA)
                await conn.close()
                await DRIVERS[name](dsn, max(10, steps // 10))  # warm-up
                return await DRIVERS[name](dsn, steps)

            times[name].append(asyncio.run(one()))
    return {name: statistics.median(values) for name, values in times.items()}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.postgres.drivers", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--reps", type=int, default=3)
    args = p.parse_args(argv)
    print(json.dumps({"ms_per_step": measure(shared_server(), args.steps, args.reps)}))


if __name__ == "__main__":
    main()
