"""What the S1 store work costs with no orchestra Python at all, and what a redesign would.

    python -m benchmarks.profiling.store_floor [--pipelines 100] [--reps 3]

Runs the S1 workload (orchestra side, default durability) once while recording every
transaction the store's writer commits: each statement with its parameters. Then it
replays the recording onto fresh files, in a tight loop with nothing but ``sqlite3``
calls, four ways:

* ``today``: the same statements, one commit per transaction, as the store does. This
  is the floor of today's data model: no Python of orchestra's can make a step cheaper.
* ``today, grouped``: the same statements, 64 transactions per commit. What the same
  rows would cost if they were written in batches off the step's path.
* ``one record``: one ``INSERT`` of a blob holding the transaction's parameters (the
  same bytes), one commit per transaction: the cost of a step appended as one record.
* ``record + grouped``: the sum of the two previous, per step: a step durable as one
  record, with the tables materialized from the records in batches.

The figures are per S1 step (17 per pipeline). It is measured, not a test.
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.sides import orchestra_side as side
from benchmarks.workload import FakeModel
from orchestra import Coordinator, SQLiteBlackboard
from orchestra.store.sqlite import writer as _writer
from orchestra.store.sqlite.connection import configure
from orchestra.store.sqlite.txn import Conn

STEPS_PER_PIPELINE = 17
WARMUP = 5
GROUP = 64

Statement = tuple[str, str, Any]  # (method, sql, parameters)
Txn = list[Statement]


class _Recorder:
    """The store's connection, recording each statement (with its parameters) it runs."""

    def __init__(self, conn: Conn, txn: Txn) -> None:
        self._conn, self._txn = conn, txn

    @property
    def in_transaction(self) -> bool:
        return self._conn.in_transaction

    async def execute(self, sql: str, params: Any = ()) -> Any:
        params = tuple(params) if not isinstance(params, dict) else dict(params)
        self._txn.append(("execute", sql, params))
        return await self._conn.execute(sql, params)

    async def executemany(self, sql: str, seq: Any) -> Any:
        rows = [tuple(r) if not isinstance(r, dict) else dict(r) for r in seq]
        self._txn.append(("executemany", sql, rows))
        return await self._conn.executemany(sql, rows)  # type: ignore[arg-type]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


async def _record(pipelines: int, db: Path) -> tuple[list[Txn], int]:
    """Every transaction of ``WARMUP + pipelines`` S1 pipelines; and where the warm-up ends."""
    txns: list[Txn] = []
    original, original_rows = _writer.run_batch, _writer.run_rows

    # take their arguments, whatever they are: one they refused would kill the writer's
    # task (and hang the tool)
    async def recording_run(conn: Conn, ops: list[Any], *args: Any, **options: Any) -> Any:
        txn: Txn = []
        txns.append(txn)
        return await original(_Recorder(conn, txn), ops, *args, **options)  # type: ignore[arg-type]

    async def recording_rows(conn: Conn, rows: list[Any], *args: Any, **options: Any) -> Any:
        txn: Txn = []  # each statement is its own transaction (see ``writer.run_rows``)
        txns.append(txn)
        return await original_rows(_Recorder(conn, txn), rows, *args, **options)  # type: ignore[arg-type]

    store = await SQLiteBlackboard.open(db)
    coord = Coordinator(store, side.pipeline(side.FakeAdapter(FakeModel(0.0))),
                        settings=side._settings())
    _writer.run_batch, _writer.run_rows = recording_run, recording_rows
    try:
        for _ in range(WARMUP):
            await coord.run({})
        warm = len(txns)
        for _ in range(pipelines):
            await coord.run({})
    finally:
        _writer.run_batch, _writer.run_rows = original, original_rows
        await store.close()
    return [_body(t) for t in txns], warm


def _body(txn: Txn) -> Txn:
    """The transaction's own statements (its BEGIN and COMMIT are the replayer's to add)."""
    return [s for s in txn if s[1] not in ("BEGIN IMMEDIATE", "COMMIT")]


async def _fresh(db: Path) -> sqlite3.Connection:
    """A new store file with orchestra's schema and pragmas, as a plain connection."""
    store = await SQLiteBlackboard.open(db)
    await store.close()
    conn = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
    configure(conn, durability="normal", busy_timeout=30.0, writer=True)
    return conn


_TABLES = ("runs", "tasks", "steps", "messages", "events")


def _counts(conn: sqlite3.Connection) -> dict[str, int]:
    return {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in _TABLES}


def _run(conn: sqlite3.Connection, txn: Txn) -> None:
    for method, sql, params in txn:
        getattr(conn, method)(sql, params)


def _today(conn: sqlite3.Connection, txns: list[Txn]) -> None:
    for txn in txns:
        conn.execute("BEGIN IMMEDIATE")
        _run(conn, txn)
        conn.execute("COMMIT")


def _grouped(conn: sqlite3.Connection, txns: list[Txn]) -> None:
    for i in range(0, len(txns), GROUP):
        conn.execute("BEGIN IMMEDIATE")
        for txn in txns[i:i + GROUP]:
            _run(conn, txn)
        conn.execute("COMMIT")


def _blob(txn: Txn) -> bytes:
    return repr([params for _, _, params in txn]).encode()


def _one_record(conn: sqlite3.Connection, blobs: list[bytes]) -> None:
    for blob in blobs:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO step_log (data) VALUES (?)", (blob,))
        conn.execute("COMMIT")


async def _replay(txns: list[Txn], warm: int, tmp: Path, rep: int,
                  expected: dict[str, int]) -> dict[str, float]:
    measured = txns[warm:]
    out: dict[str, float] = {}
    runs: dict[str, Callable[[sqlite3.Connection], None]] = {
        "today": lambda c: _today(c, measured),
        "today, grouped": lambda c: _grouped(c, measured),
    }
    for name, fn in runs.items():
        conn = await _fresh(tmp / f"{rep}-{name}.db")
        _today(conn, txns[:warm])
        start = time.perf_counter()
        fn(conn)
        out[name] = time.perf_counter() - start
        if _counts(conn) != expected:  # the replay must write exactly what the store did
            raise AssertionError(f"{name}: replayed {_counts(conn)}, recorded {expected}")
        conn.close()
    conn = await _fresh(tmp / f"{rep}-record.db")
    conn.execute("CREATE TABLE step_log (id INTEGER PRIMARY KEY, data BLOB NOT NULL)")
    blobs = [_blob(t) for t in measured]
    start = time.perf_counter()
    _one_record(conn, blobs)
    out["one record"] = time.perf_counter() - start
    conn.close()
    out["record + grouped"] = out["one record"] + out["today, grouped"]
    return out


async def _main(pipelines: int, reps: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        recorded = Path(tmp) / "recorded.db"
        txns, warm = await _record(pipelines, recorded)
        conn = sqlite3.connect(recorded)
        expected = _counts(conn)
        conn.close()
        steps = pipelines * STEPS_PER_PIPELINE
        measured = txns[warm:]
        statements = sum(len(t) for t in measured)
        print(f"recorded {len(measured)} transactions, {statements / steps:.1f} statements "
              f"and {sum(len(_blob(t)) for t in measured) / steps:.0f} parameter bytes per "
              f"step ({steps} steps)")
        results: dict[str, list[float]] = {}
        for rep in range(reps):
            for name, secs in (await _replay(txns, warm, Path(tmp), rep, expected)).items():
                results.setdefault(name, []).append(secs / steps * 1e3)
    print(f"{'ms per step':>18}  median (min-max) over {reps} replays, sqlite3 "
          f"{sqlite3.sqlite_version}")
    for name, values in results.items():
        print(f"{name:>18}  {statistics.median(values):.3f} "
              f"({min(values):.3f}-{max(values):.3f})")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--pipelines", type=int, default=100)
    p.add_argument("--reps", type=int, default=3)
    args = p.parse_args()
    asyncio.run(_main(args.pipelines, args.reps))


if __name__ == "__main__":
    main()
