"""Schema and migrations of the SQLite blackboard.

Migrations are an ordered list of SQL scripts plus a version row. Each script is
applied with its version bump in one ``BEGIN IMMEDIATE`` transaction, so a failed
script leaves neither a partial schema nor a bumped version. ``PRAGMA
application_id`` marks the file as an orchestra store, so that opening some other
program's SQLite file is refused instead of being "migrated".

Everything that inspects a file runs before anything writes to it: a file that is
not SQLite, is corrupt, belongs to another program or comes from a newer
orchestra is refused byte-for-byte untouched.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator, Sequence
from importlib import resources

from orchestra._errors import NotAStoreError, SchemaVersionError, StoreAccessError, StoreError
from orchestra.store.sqlite.migrations import MIGRATIONS

APPLICATION_ID = 0x4F524348
"""``PRAGMA application_id`` of every orchestra store ("ORCH")."""

SQLITE_HEADER = b"SQLite format 3\x00"

CURRENT = (resources.files("orchestra.store.sqlite") / "schema.sql").read_text(encoding="utf-8")
"""The schema as it is now (``schema.sql``): what a new store is created from."""

LATEST_VERSION = len(MIGRATIONS)


def check_file(path: str, *, verify_only: bool, read_only: bool = False) -> None:
    """Refuse a file that is not SQLite by its 16-byte header, before SQLite touches it,
    and a new store whose directory is missing or not writable, before anything is made."""
    try:
        with open(path, "rb") as f:
            header = f.read(len(SQLITE_HEADER))
    except FileNotFoundError:
        if verify_only or read_only:
            raise SchemaVersionError(
                f"{path}: no store exists there ({'read_only' if read_only else 'verify_only'}"
                "=True never creates one)"
            ) from None
        _check_can_create(path)
        return
    except IsADirectoryError:
        raise NotAStoreError(f"{path} is a directory, not an SQLite database file") from None
    except PermissionError:
        raise StoreAccessError(f"{path}: cannot read the store: permission denied") from None
    if header and header != SQLITE_HEADER:
        raise NotAStoreError(
            f"{path} is not an SQLite database (its header is {header!r}); "
            "point orchestra at a new path or at an existing orchestra store"
        )


def _check_can_create(path: str) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise StoreAccessError(f"cannot create the store {path}: directory {directory} does "
                               "not exist; create it first or choose another path")
    if not os.access(directory, os.W_OK):
        raise StoreAccessError(f"cannot create the store {path}: directory {directory} is "
                               "not writable (permissions or a read-only file system)")


def read_version(conn: sqlite3.Connection, path: str) -> int:
    """Return the file's schema version (0 for an empty file), reading only.

    Raises ``NotAStoreError`` for a corrupt file or another program's database and
    ``SchemaVersionError`` for a file written by a newer orchestra.
    """
    # One read transaction, so the three reads see one snapshot: read one by one, a
    # process migrating the file in between would show tables without the id.
    own = not conn.in_transaction
    try:
        if own:
            conn.execute("BEGIN")
        try:
            app_id = conn.execute("PRAGMA application_id").fetchone()[0]
            tables = {r[0] for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'")}
            version = 0
            if app_id == APPLICATION_ID and "orchestra_schema" in tables:
                row = conn.execute("SELECT version FROM orchestra_schema").fetchone()
                version = 0 if row is None else int(row[0])
        finally:
            if own and conn.in_transaction:
                conn.execute("COMMIT")
    except sqlite3.Error as exc:
        raise open_error(path, exc) from exc
    if app_id != APPLICATION_ID and (app_id != 0 or tables):
        raise NotAStoreError(
            f"{path} is an SQLite database but not an orchestra store (application_id "
            f"{app_id}, tables {sorted(tables)[:5]}); point orchestra at a new path"
        )
    if version > LATEST_VERSION:
        raise SchemaVersionError(
            f"{path} has schema version {version}, but this orchestra knows only up to "
            f"version {LATEST_VERSION}: it was written by a newer orchestra; upgrade "
            "orchestra to open it"
        )
    return version


def migrate(conn: sqlite3.Connection, path: str, *, verify_only: bool = False,
            migrations: Sequence[str] = MIGRATIONS) -> int:
    """Bring the file to ``len(migrations)``; return the version it ends at.

    A new (empty) file gets ``CURRENT`` in one step; an older one each script after its
    version. Each step re-reads the version inside its write lock, so several processes
    opening one new file at once apply each script exactly once.
    """
    latest = len(migrations)
    version = read_version(conn, path)
    if version >= latest:
        return version
    if verify_only:
        raise SchemaVersionError(
            f"{path} has schema version {version} and this orchestra needs version "
            f"{latest}: migrations are pending; open it without verify_only to apply them"
        )
    steps = [(target, migrations[target - 1]) for target in range(version + 1, latest + 1)]
    if version == 0 and migrations is MIGRATIONS:
        steps = [(latest, CURRENT)]
    # foreign keys off while a script runs (a pragma a transaction cannot change): a
    # script that rebuilds a table others point at (a CHECK SQLite cannot alter) drops
    # the old one first; every script keeps every row, so the keys hold again after
    keys = conn.execute("PRAGMA foreign_keys").fetchone()[0]
    conn.execute("PRAGMA foreign_keys = OFF")
    try:
        _apply(conn, path, steps, migrations)
    finally:
        conn.execute(f"PRAGMA foreign_keys = {int(keys)}")
    return latest


def _apply(conn: sqlite3.Connection, path: str, steps: Sequence[tuple[int, str]],
           migrations: Sequence[str]) -> None:
    for target, script in steps:
        # BEGIN IMMEDIATE so two processes migrating at once queue on the write lock
        # instead of both reading the old version and deadlocking on upgrade.
        conn.execute("BEGIN IMMEDIATE")
        try:
            current = read_version(conn, path)
            if current < target:
                # a new file meanwhile migrated part way (by an older orchestra): the rest
                scripts = migrations[current:target] if current and script is CURRENT \
                    else (script,)
                for statement in (s for one in scripts for s in _statements(one)):
                    conn.execute(statement)
                conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                conn.execute(
                    "INSERT OR REPLACE INTO orchestra_schema (id, version) VALUES (1, ?)", (target,)
                )
            conn.execute("COMMIT")
        except BaseException as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error):
                raise StoreError(
                    f"{path}: migration to schema version {target} failed ({exc}); "
                    f"the file stays at version {target - 1}"
                ) from exc
            raise


def _statements(script: str) -> Iterator[str]:
    """Split a script into statements (``executescript`` would COMMIT our transaction)."""
    buffer = ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            statement = buffer.strip()
            buffer = ""
            if statement.strip(";").strip():
                yield statement
    if buffer.strip() and not _only_comments(buffer):
        yield buffer.strip()  # incomplete: let SQLite report the syntax error


def _only_comments(text: str) -> bool:
    return all(not line.strip() or line.strip().startswith("--") for line in text.splitlines())


def _is_corruption(exc: sqlite3.Error) -> bool:
    return getattr(exc, "sqlite_errorname", "") in {"SQLITE_CORRUPT", "SQLITE_NOTADB"}


def _corrupt(path: str, exc: sqlite3.Error) -> NotAStoreError:
    size = os.path.getsize(path) if os.path.exists(path) else 0
    return NotAStoreError(
        f"{path} is corrupt or not an SQLite database ({exc}; {size} bytes); "
        "restore it from a backup or point orchestra at a new path"
    )


def open_error(path: str, exc: sqlite3.Error) -> StoreError:
    """Say whose problem an error while opening is: a bad file, or the environment."""
    if _is_corruption(exc) or not isinstance(exc, sqlite3.OperationalError):
        return _corrupt(path, exc)
    name = getattr(exc, "sqlite_errorname", "")
    if name.startswith(("SQLITE_CANTOPEN", "SQLITE_READONLY", "SQLITE_PERM", "SQLITE_AUTH")):
        return StoreAccessError(f"{path}: cannot open the store for writing ({exc}): check the "
                                "permissions of the file and its directory")
    return StoreError(f"{path}: cannot open the store: {exc}")
