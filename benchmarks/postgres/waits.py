"""What PostgreSQL's backends wait on while N workers serve S5: the server's profile.

    python -m benchmarks.postgres.waits [--workers 4] [--runs 4] [--tasks 250] [--mode cpu]

Runs one S5 pass (``benchmarks.postgres.workers``) and, while the workers run, samples
``pg_stat_activity`` every 5 ms: of the backends in a statement, how many run on
CPU and how many wait, on what (``wait_event_type:wait_event``); for lock waits,
which lock (``pg_locks``: its type and relation) and the statement that waits. Lock
waits on a run's row (``transactionid``/``tuple`` on ``runs``) are the per-run event
counter; ``Lock:object`` on the notify queue is NOTIFY's commit-time lock.
(``pg_stat_statements`` is not in the pgserver wheel's build.)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import threading
import time
from collections import Counter

import asyncpg

from benchmarks.postgres import workers as pg_workers
from benchmarks.postgres.local import shared_server
from benchmarks.workers import serve

_ACTIVITY = """
SELECT coalesce(a.wait_event_type || ':' || a.wait_event, 'CPU'),
       (SELECT l.locktype || coalesce(':' || l.relation::regclass::text, '') FROM pg_locks l
        WHERE l.pid = a.pid AND NOT l.granted LIMIT 1),
       left(regexp_replace(a.query, '\\s+', ' ', 'g'), 60)
FROM pg_stat_activity a
WHERE a.state = 'active' AND a.pid <> pg_backend_pid() AND a.datname = current_database()"""


async def _sample(dsn: str, stop: threading.Event) -> tuple[Counter[str], Counter[str], int]:
    conn = await asyncpg.connect(dsn)
    waits: Counter[str] = Counter()
    locks: Counter[str] = Counter()
    samples = 0
    try:
        while not stop.is_set():
            for wait, lock, query in await conn.fetch(_ACTIVITY):
                waits[wait] += 1
                if lock:
                    locks[f"{lock} | {query}"] += 1
            samples += 1
            await asyncio.sleep(0.005)
    finally:
        await conn.close()
    return waits, locks, samples


def profile(workers: int, runs: int, tasks: int, mode: str) -> dict[str, object]:
    server = shared_server()
    dsn = server.create_database("w" + os.urandom(4).hex())
    latency, concurrency = pg_workers.MODES[mode]
    asyncio.run(pg_workers._create(dsn, runs, tasks, latency))
    stop = threading.Event()
    out: list[tuple[Counter[str], Counter[str], int]] = []
    sampler = threading.Thread(target=lambda: out.append(asyncio.run(_sample(dsn, stop))))
    sampler.start()
    start = time.monotonic()
    try:
        serve(dsn, workers, None, 1800.0, concurrency)
    finally:
        stop.set()
        sampler.join()
    wall = time.monotonic() - start
    waits, locks, samples = out[0]
    return {"workers": workers, "mode": mode, "wall_s": round(wall, 2),
            "tasks_per_s": round(asyncio.run(pg_workers._rate(dsn)), 1), "samples": samples,
            "active_backends_mean": round(sum(waits.values()) / max(samples, 1), 2),
            "waits": dict(waits.most_common(12)), "lock_waits": dict(locks.most_common(8))}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.postgres.waits", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workers", type=int, default=4)
    p.add_argument("--runs", type=int, default=4)
    p.add_argument("--tasks", type=int, default=250)
    p.add_argument("--mode", default="cpu", choices=sorted(pg_workers.MODES))
    args = p.parse_args(argv)
    print(json.dumps(profile(args.workers, args.runs, args.tasks, args.mode), indent=1))


if __name__ == "__main__":
    main()
