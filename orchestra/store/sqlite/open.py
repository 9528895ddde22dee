"""Opening a SQLite store's connections: check and migrate the file first, on a plain
connection off the loop; then the writer's and the reader's aiosqlite connections,
configured; a read-only store (``mode=ro``, or ``immutable`` where SQLite needs it)."""

from __future__ import annotations

import asyncio
import os
import sqlite3
from functools import partial

from orchestra._errors import SchemaVersionError, StoreAccessError, StoreError
from orchestra._types import Durability
from orchestra.store.protocol import StatementTrace
from orchestra.store.sqlite import schema
from orchestra.store.sqlite.connection import (
    configure,
    configure_async,
    connect,
    connect_async,
    read_only_uri,
)
from orchestra.store.sqlite.txn import Conn, TracedConn


def prepare(conn: sqlite3.Connection, *, path: str, durability: Durability,
             busy_timeout: float, verify_only: bool) -> None:
    """On the writer's thread: refuse a bad file (reading only), then configure and migrate."""
    try:
        schema.read_version(conn, path)
        if verify_only:
            schema.migrate(conn, path, verify_only=True)  # raises if pending; writes nothing
        configure(conn, durability=durability, busy_timeout=busy_timeout, writer=True)
        schema.migrate(conn, path)
    except sqlite3.Error as exc:
        raise schema.open_error(path, exc) from exc


def open_writer(path: str, *, durability: Durability, busy_timeout: float,
                verify_only: bool) -> sqlite3.Connection:
    """On the writer's thread: connect, refuse a bad file, configure and migrate."""
    try:
        conn = connect(path, busy_timeout)
    except sqlite3.Error as exc:
        raise schema.open_error(path, exc) from exc
    try:
        prepare(conn, path=path, durability=durability, busy_timeout=busy_timeout,
                verify_only=verify_only)
    except BaseException:
        conn.close()
        raise
    return conn


def check_and_migrate(path: str, *, durability: Durability, busy_timeout: float,
                      verify_only: bool) -> None:
    """Off the loop, on a connection of its own: refuse a bad file, migrate it (WAL)."""
    open_writer(path, durability=durability, busy_timeout=busy_timeout,
                verify_only=verify_only).close()


async def open_async(path: str, target: str, *, durability: Durability, busy_timeout: float,
                     writer: bool, uri: bool = False, trace: StatementTrace | None = None,
                     name: str = "") -> Conn:
    """An aiosqlite connection to ``target`` (``path`` or a URI naming it), configured.
    With ``trace``, the connection (its pragmas first) tells it each statement as
    ``name``'s (see ``StatementTrace``)."""
    try:
        db = await connect_async(target, busy_timeout, uri=uri)
    except sqlite3.Error as exc:
        raise schema.open_error(path, exc) from exc
    try:
        await configure_async(db, durability=durability, busy_timeout=busy_timeout,
                              writer=writer,
                              trace=None if trace is None else partial(trace, name))
    except BaseException as exc:
        await db.close()
        if isinstance(exc, sqlite3.Error):
            raise schema.open_error(path, exc) from exc
        raise
    return Conn(db) if trace is None else TracedConn(db, trace, name)


async def open_read_only(path: str, busy_timeout: float, *,
                         trace: StatementTrace | None = None, name: str = "") -> Conn:
    """A checked ``mode=ro`` aiosqlite connection (see :func:`read_only_target`)."""
    target = await asyncio.to_thread(read_only_target, path, busy_timeout)
    return await open_async(path, target, durability="normal", busy_timeout=busy_timeout,
                            writer=False, uri=True, trace=trace, name=name)


def read_only_target(path: str, busy_timeout: float) -> str:
    """Off the loop: the URI that opens ``path`` read-only, checked: ``mode=ro``, or
    ``immutable`` when SQLite cannot open the file read-only as is (a read-only
    directory cannot hold its ``-shm`` file) and no write-ahead log holds changes the
    file lacks."""
    for immutable in (False, True):
        target = read_only_uri(path, immutable=immutable)
        try:
            conn = connect(target, busy_timeout, uri=True)
        except sqlite3.Error as exc:
            raise schema.open_error(path, exc) from exc
        try:
            prepare_read_only(conn, path=path, busy_timeout=busy_timeout)
            conn.close()
            return target
        except BaseException as exc:
            conn.close()
            cause = exc.__cause__ if isinstance(exc, StoreError) else None
            if immutable or not _needs_immutable(getattr(cause, "sqlite_errorname", "")):
                raise
        if has_content(f"{path}-wal"):
            raise StoreAccessError(
                f"{path}: cannot read the store read-only: its write-ahead log {path}-wal "
                "holds changes the file lacks, and SQLite cannot read it without writing "
                "next to it; open the store once where its directory is writable")
    raise AssertionError("unreachable")


def _needs_immutable(error: str) -> bool:
    """SQLite's answer when a WAL store's ``-shm`` cannot be made: it cannot open the file
    (``CANTOPEN``), or says it would have to write (``READONLY_DIRECTORY`` where the
    directory is another user's, ``READONLY_CANTINIT``, ``READONLY_RECOVERY``)."""
    return error == "SQLITE_CANTOPEN" or error.startswith("SQLITE_READONLY_")


def has_content(path: str) -> bool:
    """Whether the file at ``path`` exists and is not empty."""
    try:
        return os.stat(path).st_size > 0
    except FileNotFoundError:
        return False


def prepare_read_only(conn: sqlite3.Connection, *, path: str, busy_timeout: float) -> None:
    """Refuse a bad file or one that needs migrating (it cannot be migrated read-only)."""
    try:
        version = schema.read_version(conn, path)
        configure(conn, durability="normal", busy_timeout=busy_timeout, writer=False)
    except sqlite3.Error as exc:
        raise schema.open_error(path, exc) from exc
    if version < schema.LATEST_VERSION:
        raise SchemaVersionError(
            f"{path} has schema version {version} and this orchestra needs version "
            f"{schema.LATEST_VERSION}; it cannot be migrated read-only: open it once where it "
            "can be written")

