"""Opening connections: the one connect hook, and running SQL on a connection's thread."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Awaitable, Callable
from typing import TypeVar, cast
from urllib.parse import quote

import aiosqlite

from orchestra._errors import StoreError
from orchestra._types import Durability

T = TypeVar("T")

_CACHE_KIB = 64 * 1024
_SYNCHRONOUS = {"normal": "NORMAL", "full": "FULL"}


def on_thread(conn: aiosqlite.Connection, fn: Callable[[sqlite3.Connection], T]) -> Awaitable[T]:
    """Run ``fn(raw sqlite3 connection)`` on ``conn``'s thread: one thread hop in all.

    aiosqlite hops threads once per call (~30-60 us each); a transaction made of six
    awaited statements would cost six hops. ``Connection._execute`` ("run this callable
    on the connection thread") is aiosqlite's private API, and this is the only
    place orchestra uses it: a whole transaction or read is one sync function.
    """
    return cast(Awaitable[T], conn._execute(lambda: fn(conn._conn)))  # type: ignore[no-untyped-call]


def raw(conn: aiosqlite.Connection) -> sqlite3.Connection:
    """The sqlite3 connection under ``conn``, for running a write inline on the loop.

    Only the group-commit writer uses this, and only while no job of its own is on
    ``conn``'s thread (it has one batch in flight at a time), so the connection is
    never used from two threads at once. aiosqlite private API, like ``on_thread``.
    """
    return conn._conn


def read_only_uri(path: str, *, immutable: bool) -> str:
    """The URI that opens ``path`` read-only. ``immutable`` also tells SQLite nobody
    writes it, so it needs no ``-shm`` file (which a read-only directory cannot hold)."""
    uri = f"file:{quote(os.path.abspath(path))}?mode=ro"
    return uri + "&immutable=1" if immutable else uri


async def connect(path: str, busy_timeout: float, *, uri: bool = False) -> aiosqlite.Connection:
    """An autocommit connection (``isolation_level=None``): we issue BEGIN/COMMIT ourselves."""
    if sqlite3.sqlite_version_info < (3, 35, 0):
        raise StoreError(
            f"orchestra needs SQLite >= 3.35 (for RETURNING); this Python links SQLite "
            f"{sqlite3.sqlite_version}. Use a Python built against a newer SQLite."
        )
    # check_same_thread=False: the writer may run a lone write inline (see ``raw``)
    return await aiosqlite.connect(path, isolation_level=None, timeout=busy_timeout,
                                   cached_statements=256, check_same_thread=False, uri=uri)


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
    if durability not in _SYNCHRONOUS:
        raise StoreError(f"durability must be 'normal' or 'full', got {durability!r}")
    conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
    if writer:
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise StoreError(f"could not switch the store to WAL mode (got {mode!r})")
    conn.execute(f"PRAGMA synchronous = {_SYNCHRONOUS[durability]}")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA temp_store = MEMORY")
    # 64 MiB of page cache at most (the default is 2 MiB): hot indexes of a busy store
    # stay in memory instead of being re-read (and looked up in the WAL) per statement.
    conn.execute(f"PRAGMA cache_size = -{_CACHE_KIB}")
    if not writer:
        conn.execute("PRAGMA query_only = ON")
