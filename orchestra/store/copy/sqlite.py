"""The SQLite end of ``orchestra copy``: a run read in one snapshot, written in one transaction.

Plain ``sqlite3`` on a connection of its own (the store's own handle is closed by
then); connecting, each whole read or write, and closing are one call each on a
worker thread, never SQL on the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import time
from collections.abc import Callable, Iterator

from orchestra._errors import StoreError
from orchestra.store.copy.tables import HAS_RUN, LIVE_UNTIL, READS, RUN_IDS, RunRows, insert

# a result equal to the task's final reply is kept once, in that message (result_msg)
_RESULT = "COALESCE(result, (SELECT m.content FROM messages m WHERE m.rowid = tasks.result_msg))"


def _sql(text: str) -> str:
    """orchestra's copy SQL numbers its parameters $1, $2...: SQLite spells them ?1, ?2..."""
    return text.replace("$", "?").format(position="rowid", result=_RESULT)


class SQLiteSide:
    def __init__(self, path: str, conn: sqlite3.Connection) -> None:
        """Use :meth:`open`."""
        self.where = path
        self._conn = conn

    @classmethod
    async def open(cls, path: str, busy_timeout: float = 30.0) -> SQLiteSide:
        def connect() -> sqlite3.Connection:  # no SQL on the event loop, not even this
            conn = sqlite3.connect(path, timeout=busy_timeout, isolation_level=None,
                                   check_same_thread=False)
            conn.execute("PRAGMA foreign_keys = ON")
            return conn
        return cls(path, await asyncio.to_thread(connect))

    async def run_ids(self) -> list[str]:
        return [r[0] for r in await asyncio.to_thread(self._conn.execute(RUN_IDS).fetchall)]

    async def has_run(self, run_id: str) -> bool:
        def has() -> bool:
            return self._conn.execute(_sql(HAS_RUN), (run_id,)).fetchone() is not None
        return await asyncio.to_thread(has)

    async def read(self, run_id: str) -> tuple[RunRows, float | None, float]:
        return await asyncio.to_thread(self._read, run_id)

    def _read(self, run_id: str) -> tuple[RunRows, float | None, float]:
        with self._transaction("BEGIN"):  # one snapshot of the whole run (WAL)
            tables = {table: self._conn.execute(_sql(sql), (run_id,)).fetchall()
                      for table, sql in READS.items()}
            live_until = self._conn.execute(_sql(LIVE_UNTIL), (run_id,)).fetchone()[0]
        return RunRows(run_id, tables), live_until, time.time()

    async def write(self, rows: RunRows,
                    fix_events: Callable[[RunRows, dict[int, int]], None]) -> bool:
        return await asyncio.to_thread(self._write, rows, fix_events)

    def _write(self, rows: RunRows, fix_events: Callable[[RunRows, dict[int, int]], None]
               ) -> bool:
        c = self._conn
        try:
            with self._transaction("BEGIN IMMEDIATE"):
                if c.execute(_sql(HAS_RUN), (rows.run_id,)).fetchone() is not None:
                    return False
                new_ids: dict[int, int] = {}
                for table, data in rows.tables.items():
                    if table == "notes":
                        for old, *note in data:
                            new_ids[old] = c.execute(_sql(insert(table)), note).fetchone()[0]
                        fix_events(rows, new_ids)
                    else:
                        c.executemany(_sql(insert(table)), data)
                return True
        except sqlite3.Error as exc:
            raise StoreError(f"{self.where}: copying run {rows.run_id} failed ({exc}); "
                             "nothing of it was written") from exc

    @contextlib.contextmanager
    def _transaction(self, begin: str) -> Iterator[None]:
        self._conn.execute(begin)
        try:
            yield
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    async def close(self) -> None:
        await asyncio.to_thread(self._conn.close)
