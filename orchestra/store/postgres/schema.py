"""Schema and migrations of the PostgreSQL blackboard (the scripts are ``migrations``).

The same tables as the SQLite store, in PostgreSQL's types. Versioning works as in
SQLite: a version row; each script and its version bump commit in one transaction
(PostgreSQL DDL is transactional, so a failed script leaves neither a partial schema
nor a bumped version); a database from a newer orchestra, or another program's
tables, is refused before anything is written. Concurrent openers of a new
database serialize on an advisory lock, so each script runs once.
"""

from __future__ import annotations

import asyncpg

from orchestra._errors import NotAStoreError, SchemaVersionError, StoreError
from orchestra.store.postgres.migrations import MIGRATIONS

MARK = "orchestra"
"""``orchestra_schema.app``: what marks a database's tables as an orchestra store."""
_LOCK_KEY = 0x4F524348  # "ORCH": the advisory lock migrations take

LATEST_VERSION = len(MIGRATIONS)

_TABLES = (
    "SELECT table_name FROM information_schema.tables "
    "WHERE table_schema = current_schema() ORDER BY table_name"
)
_VERSION = "SELECT app, version FROM orchestra_schema WHERE id = 1"


async def read_version(conn: asyncpg.Connection, where: str) -> int:
    """The database's schema version (0 for an empty one), reading only.

    Raises ``NotAStoreError`` for another program's tables and ``SchemaVersionError``
    for a database written by a newer orchestra.
    """
    tables = [r[0] for r in await conn.fetch(_TABLES)]
    if not tables:
        return 0
    row = await conn.fetchrow(_VERSION) if "orchestra_schema" in tables else None
    if row is None or row[0] != MARK:
        raise NotAStoreError(
            f"{where} holds tables that are not an orchestra store ({', '.join(tables[:5])}); "
            "point orchestra at an empty database or schema"
        )
    version = int(row[1])
    if version > LATEST_VERSION:
        raise SchemaVersionError(
            f"{where} has schema version {version}, but this orchestra knows only up to "
            f"version {LATEST_VERSION}: it was written by a newer orchestra; upgrade "
            "orchestra to open it"
        )
    return version


async def migrate(conn: asyncpg.Connection, where: str, *, verify_only: bool = False,
                  migrations: tuple[str, ...] = MIGRATIONS) -> int:
    """Bring the database to ``len(migrations)``; return the version it ends at."""
    latest = len(migrations)
    version = await read_version(conn, where)
    if version >= latest:
        return version
    if verify_only:
        raise SchemaVersionError(
            f"{where} has schema version {version} and this orchestra needs version "
            f"{latest}: migrations are pending; run `orchestra migrate` or open it without "
            "verify_only"
        )
    for target in range(version + 1, latest + 1):
        try:
            async with conn.transaction():
                await conn.execute("SELECT pg_advisory_xact_lock($1)", _LOCK_KEY)
                if await read_version(conn, where) < target:  # another opener may have done it
                    await conn.execute(migrations[target - 1])
                    await conn.execute(
                        "INSERT INTO orchestra_schema (id, app, version) VALUES (1, $1, $2) "
                        "ON CONFLICT (id) DO UPDATE SET version = excluded.version",
                        MARK, target)
        except asyncpg.PostgresError as exc:
            raise StoreError(
                f"{where}: migration to schema version {target} failed ({exc}); "
                f"the database stays at version {target - 1}"
            ) from exc
    return latest
