"""Opening connections: the connect functions (plain ``sqlite3`` to check and migrate a
file, aiosqlite for the store's writer and reader) and the one connect hook (pragmas)."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import time
from collections.abc import Callable, Sequence
from urllib.parse import quote

import aiosqlite

from orchestra._errors import StoreError
from orchestra._types import Durability

_CACHE_KIB = 64 * 1024
_SYNCHRONOUS = {"normal": "NORMAL", "full": "FULL"}


def read_only_uri(path: str, *, immutable: bool) -> str:
    """The URI that opens ``path`` read-only. ``immutable`` also tells SQLite nobody
    writes it, so it needs no ``-shm`` file (which a read-only directory cannot hold)."""
    uri = f"file:{quote(os.path.abspath(path))}?mode=ro"
    return uri + "&immutable=1" if immutable else uri


def _check_version() -> None:
    if sqlite3.sqlite_version_info < (3, 35, 0):
        raise StoreError(
            f"orchestra needs SQLite >= 3.35 (for RETURNING); this Python links SQLite "
            f"{sqlite3.sqlite_version}. Use a Python built against a newer SQLite."
        )


def connect(path: str, busy_timeout: float, *, uri: bool = False) -> sqlite3.Connection:
    """An autocommit connection (``isolation_level=None``): we issue BEGIN/COMMIT ourselves.

    Plain ``sqlite3``, used off the loop (``asyncio.to_thread``) to check and migrate a
    file before the store opens its aiosqlite connections (:func:`connect_async`)."""
    _check_version()
    return sqlite3.connect(path, isolation_level=None, timeout=busy_timeout,
                           cached_statements=256, uri=uri)


async def connect_async(path: str, busy_timeout: float, *, uri: bool = False
                        ) -> aiosqlite.Connection:
    """The same connection on aiosqlite: made and used on aiosqlite's thread only."""
    _check_version()
    return await aiosqlite.connect(path, isolation_level=None, timeout=busy_timeout,
                                   cached_statements=256, uri=uri)


def configure(conn: sqlite3.Connection, *, durability: Durability, busy_timeout: float,
              writer: bool) -> None:
    """The connect hook: every pragma orchestra relies on, set in one place.

    * ``journal_mode=WAL``: readers never block the writer, and a commit is one
      append to the log.
    * ``synchronous``: ``NORMAL`` (durability "normal") survives a killed process,
      ``FULL`` (durability "full") also survives power loss by fsyncing every commit.
    * ``busy_timeout``: a writer in another process waits for the lock instead of
      failing with "database is locked".
    * ``foreign_keys=ON``: rows cannot point at runs or tasks that do not exist.
    * ``cache_size``: up to 64 MiB of pages per connection (measured: ~20% less CPU
      per step with 200 pipelines on one file than the 2 MiB default).
    * The reader connection is ``query_only``: a bug cannot write through it.
    """
    deadline = time.monotonic() + busy_timeout
    for statement in pragmas(durability=durability, busy_timeout=busy_timeout, writer=writer):
        attempt = 0
        while True:
            try:
                row = conn.execute(statement).fetchone()
                break
            except sqlite3.OperationalError as exc:
                attempt += 1
                time.sleep(_lock_retry_delay(exc, attempt, deadline))
        _check_wal(statement, row)


async def configure_async(db: aiosqlite.Connection, *, durability: Durability,
                          busy_timeout: float, writer: bool,
                          trace: Callable[[str], None] | None = None) -> None:
    """:func:`configure` on an aiosqlite connection (``trace``: told each pragma)."""
    deadline = time.monotonic() + busy_timeout
    for statement in pragmas(durability=durability, busy_timeout=busy_timeout, writer=writer):
        if trace is not None:
            trace(statement)
        attempt = 0
        while True:
            try:
                rows = list(await db.execute_fetchall(statement))
                break
            except sqlite3.OperationalError as exc:
                attempt += 1
                await asyncio.sleep(_lock_retry_delay(exc, attempt, deadline))
        _check_wal(statement, rows[0] if rows else None)


def _lock_retry_delay(exc: sqlite3.OperationalError, attempt: int, deadline: float) -> float:
    """How long to wait before trying a pragma again, or re-raise ``exc``.

    Switching a new file to WAL needs its exclusive lock. Two processes that both read
    the (rollback-mode) file first and then both ask for that lock would deadlock, so
    SQLite answers one of them "database is locked" at once, without calling the busy
    handler. That answer is retried here (a few ms, growing) until ``busy_timeout``.
    """
    if "locked" not in str(exc) and "busy" not in str(exc):
        raise exc
    delay: float = min(0.005 * 2.0 ** min(attempt, 6), 0.25)
    if time.monotonic() + delay > deadline:
        raise exc
    return delay


def pragmas(*, durability: Durability, busy_timeout: float, writer: bool) -> list[str]:
    """The statements of the connect hook (see :func:`configure`), in order."""
    if durability not in _SYNCHRONOUS:
        raise StoreError(f"durability must be 'normal' or 'full', got {durability!r}")
    return [f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}",
            *(["PRAGMA journal_mode = WAL"] if writer else []),
            f"PRAGMA synchronous = {_SYNCHRONOUS[durability]}",
            "PRAGMA foreign_keys = ON",
            "PRAGMA temp_store = MEMORY",
            # 64 MiB of page cache at most (the default is 2 MiB): hot indexes of a busy
            # store stay in memory instead of being re-read (and looked up in the WAL)
            f"PRAGMA cache_size = -{_CACHE_KIB}",
            *([] if writer else ["PRAGMA query_only = ON"])]


def _check_wal(statement: str, row: Sequence[object] | None) -> None:
    if statement == "PRAGMA journal_mode = WAL":
        mode = row[0] if row else None
        if str(mode).lower() != "wal":
            raise StoreError(f"could not switch the store to WAL mode (got {mode!r})")
