"""Where an S1 step's time goes: SQL statements per step, their cost, WAL pages per step.

    python -m benchmarks.profiling.profile_step [--pipelines 100]

Runs the S1 workload (orchestra side, default durability) once to warm up, then
again while timing every statement the store's writer executes, and reports per
step: statements by kind with their mean cost, the total time in SQLite, and the
WAL frames (4 KiB pages) each step appends; then the same for the statements of the
reader connection (every read is a hop to aiosqlite's thread too). This is the
profile behind the S1 and S2 notes in the README: it is measured, not a test.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.sides import orchestra_side as side
from benchmarks.workload import FakeModel
from orchestra import Coordinator, SQLiteBlackboard
from orchestra.store.sqlite.txn import Conn

STEPS_PER_PIPELINE = 17
_FRAME = 4096 + 24  # a WAL frame: one page plus its header


_KEYS: dict[str, str] = {}  # SQL text -> its one-line label


class _Timed:
    """The store's connection with its execute/executemany calls timed by statement, on
    ``clock`` (wall time by default: a statement's hop to aiosqlite's thread included)."""

    def __init__(self, conn: Conn, stats: dict[str, list[float]],
                 clock: Callable[[], float] = time.perf_counter) -> None:
        self._conn = conn
        self._stats = stats
        self._clock = clock

    @property
    def in_transaction(self) -> bool:
        return self._conn.in_transaction

    async def _timed(self, name: str, sql: str, *args: Any) -> Any:
        start = self._clock()
        out = await getattr(self._conn, name)(sql, *args)
        elapsed = self._clock() - start  # before the bookkeeping below
        key = _KEYS.get(sql)
        if key is None:
            key = _KEYS[sql] = re.sub(r"\s+", " ", sql).strip()[:90]
        entry = self._stats[key]
        entry[0] += 1
        entry[1] += elapsed
        return out

    async def execute(self, sql: str, *args: Any) -> Any:
        return await self._timed("execute", sql, *args)

    async def executemany(self, sql: str, *args: Any) -> Any:
        return await self._timed("executemany", sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


async def _profile(pipelines: int, db: Path) -> None:
    stats: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    read_stats: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    store = await SQLiteBlackboard.open(db)
    coord = Coordinator(store, side.pipeline(side.FakeAdapter(FakeModel(0.0))),
                        settings=side._settings())
    try:
        for _ in range(5):
            await coord.run({})
        wal = Path(f"{db}-wal")
        # no checkpoints while measuring: the WAL then grows by exactly what commits wrote
        # (fetched: a cursor left open would keep its statement running and make every
        # later COMMIT fail with "SQL statements in progress")
        await store._writer.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        await store._writer.conn.execute("PRAGMA wal_autocheckpoint = 0")
        # every statement the writer runs (batches and rows) goes through its connection
        conn, store._writer.conn = store._writer.conn, _Timed(store._writer.conn, stats)  # type: ignore[assignment]
        reader, store._reader = store._reader, _Timed(store._reader, read_stats)  # type: ignore[assignment]
        frames_before, started = wal.stat().st_size, time.perf_counter()
        for _ in range(pipelines):
            await coord.run({})
        wall = time.perf_counter() - started
        frames = (wal.stat().st_size - frames_before) / _FRAME
        store._reader = reader
        store._writer.conn = conn
    finally:
        await store.close()
    steps = pipelines * STEPS_PER_PIPELINE
    in_sql = sum(t for _, t in stats.values())
    print(f"{steps} steps: {wall / steps * 1e3:.3f} ms/step wall, "
          f"{in_sql / steps * 1e3:.3f} ms/step in SQLite calls, "
          f"{sum(n for n, _ in stats.values()) / steps:.1f} statements/step"
          + (f", {frames / steps:.1f} WAL pages/step" if frames > 0 else "")
          + f"; reads: {sum(n for n, _ in read_stats.values()) / steps:.1f} statements/step")
    _table("writer", stats, steps)
    _table("reader", read_stats, steps)


def _table(name: str, stats: dict[str, list[float]], steps: int) -> None:
    print(f" per step   mean us  us/step  {name} statement")
    for sql, (n, t) in sorted(stats.items(), key=lambda kv: -kv[1][1]):
        print(f"{n / steps:9.2f} {t / n * 1e6:9.1f} {t / steps * 1e6:8.1f}  {sql}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--pipelines", type=int, default=100)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(_profile(args.pipelines, Path(tmp) / "profile.db"))


if __name__ == "__main__":
    main()
