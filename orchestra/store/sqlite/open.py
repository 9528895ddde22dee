"""Opening a SQLite store's connections, each on the thread that owns it: check,
configure and migrate the writer's; configure the reader's; open a read-only store
(``mode=ro``, or ``immutable`` where SQLite needs it)."""

from __future__ import annotations

import os
import sqlite3

from orchestra._errors import SchemaVersionError, StoreAccessError, StoreError
from orchestra._types import Durability
from orchestra.store.sqlite import schema
from orchestra.store.sqlite.connection import configure, connect, read_only_uri


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


def open_reader(path: str, *, durability: Durability, busy_timeout: float
                ) -> sqlite3.Connection:
    """On the reader's thread: connect and configure (``query_only``)."""
    try:
        conn = connect(path, busy_timeout)
        configure(conn, durability=durability, busy_timeout=busy_timeout, writer=False)
    except sqlite3.Error as exc:
        raise schema.open_error(path, exc) from exc
    return conn


def connect_read_only(path: str, busy_timeout: float) -> sqlite3.Connection:
    """On its thread: a ``mode=ro`` connection, checked; ``immutable`` when SQLite cannot
    open the file read-only as is (a read-only directory cannot hold its ``-shm`` file)
    and no write-ahead log holds changes the file lacks."""
    for immutable in (False, True):
        try:
            conn = connect(read_only_uri(path, immutable=immutable), busy_timeout, uri=True)
        except sqlite3.Error as exc:
            raise schema.open_error(path, exc) from exc
        try:
            prepare_read_only(conn, path=path, busy_timeout=busy_timeout)
            return conn
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

