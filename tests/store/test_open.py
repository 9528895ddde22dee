"""Opening files: migrations, and clear refusals that leave a bad file byte-for-byte unchanged."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from store_helpers import query

from orchestra._errors import NotAStoreError, SchemaVersionError, StoreError
from orchestra._types import Durability
from orchestra.store import NewTask, SQLiteBlackboard
from orchestra.store.sqlite import schema


def snapshot(path: Path) -> dict[str, bytes]:
    """The bytes of the file and any WAL/shm beside it."""
    return {p.name: p.read_bytes() for p in path.parent.iterdir()}


def overwrite(path: Path, start: int, end: int, pattern: bytes) -> None:
    data = bytearray(path.read_bytes() if path.exists() else b"")
    data[start:end] = (pattern * (end - start))[: end - start]
    path.write_bytes(bytes(data))


async def make_store(path: Path) -> None:
    store = await SQLiteBlackboard.open(path)
    await store.create_run("p", {}, tasks=[NewTask("a", 1)])
    await store.close()


async def test_new_store_is_marked_and_at_the_latest_version(db_path: Path) -> None:
    await make_store(db_path)
    assert query(db_path, "PRAGMA application_id") == [(schema.APPLICATION_ID,)]
    assert query(db_path, "SELECT version FROM orchestra_schema") == [(schema.LATEST_VERSION,)]
    assert query(db_path, "PRAGMA journal_mode") == [("wal",)]
    async with await SQLiteBlackboard.open(db_path, verify_only=True) as store:
        assert len(await store.list_runs()) == 1


async def test_durability_sets_synchronous(db_path: Path) -> None:
    """Both connections are set to the level asked for (``synchronous`` is a setting of
    each connection: seen in the statements the store sends, its ``trace``)."""
    cases: tuple[tuple[Durability, str], ...] = (("normal", "NORMAL"), ("full", "FULL"))
    for durability, level in cases:
        assert await _synchronous_sent(db_path, durability) == [
            ("writer", f"PRAGMA synchronous = {level}"),
            ("reader", f"PRAGMA synchronous = {level}")]


async def _synchronous_sent(db_path: Path, durability: Durability) -> list[tuple[str, str]]:
    sent: list[tuple[str, str]] = []
    store = await SQLiteBlackboard.open(db_path, durability=durability,
                                        trace=lambda conn, sql: sent.append((conn, sql)))
    await store.close()
    return [(conn, sql) for conn, sql in sent if sql.startswith("PRAGMA synchronous")]


def test_a_failing_migration_does_not_bump_the_version(tmp_path: Path) -> None:
    path = str(tmp_path / "m.db")
    conn = sqlite3.connect(path, isolation_level=None)
    n = schema.migrate(conn, path)
    assert n == schema.LATEST_VERSION
    broken = "CREATE TABLE half_done (x INTEGER);\nINSERT INTO no_such_table VALUES (1);\n"
    with pytest.raises(StoreError, match=f"migration to schema version {n + 1} failed"):
        schema.migrate(conn, path, migrations=(*schema.MIGRATIONS, broken))
    assert conn.execute("SELECT version FROM orchestra_schema").fetchone() == (n,)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    assert "half_done" not in tables
    fixed = "CREATE TABLE half_done (x INTEGER);\n"
    with pytest.raises(SchemaVersionError, match="migrations are pending"):
        schema.migrate(conn, path, migrations=(*schema.MIGRATIONS, fixed), verify_only=True)
    assert schema.migrate(conn, path, migrations=(*schema.MIGRATIONS, fixed)) == n + 1
    assert conn.execute("SELECT version FROM orchestra_schema").fetchone() == (n + 1,)
    conn.close()


async def test_newer_schema_is_refused_untouched(db_path: Path) -> None:
    await make_store(db_path)
    conn = sqlite3.connect(db_path)
    conn.execute("UPDATE orchestra_schema SET version = 99")
    conn.commit()
    conn.close()
    before = snapshot(db_path)
    with pytest.raises(SchemaVersionError) as caught:
        await SQLiteBlackboard.open(db_path)
    message = str(caught.value)
    assert str(db_path) in message and "99" in message
    assert f"version {schema.LATEST_VERSION}" in message
    assert "upgrade orchestra" in message
    assert snapshot(db_path) == before


async def test_verify_only_refuses_pending_migrations(tmp_path: Path) -> None:
    missing = tmp_path / "missing.db"
    with pytest.raises(SchemaVersionError):
        await SQLiteBlackboard.open(missing, verify_only=True)
    assert not missing.exists()
    empty = tmp_path / "empty.db"
    sqlite3.connect(empty).execute("VACUUM").connection.close()  # a valid, empty database
    before = snapshot(empty)
    with pytest.raises(SchemaVersionError, match=r"version 0 .* migrations are pending"):
        await SQLiteBlackboard.open(empty, verify_only=True)
    assert snapshot(empty) == before


@pytest.mark.parametrize("content", [b"hello, this is a text file\n" * 40, b"\x00" * 100,
                                     b"SQLite format 2\x00" + b"\x00" * 200])
async def test_not_sqlite_is_refused_untouched(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "notes.txt"
    overwrite(path, 0, len(content), content)
    with pytest.raises(NotAStoreError, match="is not an SQLite database") as caught:
        await SQLiteBlackboard.open(path)
    assert str(path) in str(caught.value)
    assert snapshot(path) == {"notes.txt": content}  # unchanged, and no -wal/-shm created


async def test_corrupt_file_is_refused_untouched(db_path: Path) -> None:
    await make_store(db_path)
    overwrite(db_path, 100, 4096, b"\xde\xad\xbe\xef")  # the rest of the schema page
    before = snapshot(db_path)
    with pytest.raises(NotAStoreError, match="corrupt") as caught:
        await SQLiteBlackboard.open(db_path)
    assert str(db_path) in str(caught.value)
    assert snapshot(db_path) == before
    garbage = db_path.parent / "garbage.db"
    overwrite(garbage, 0, 5016, b"\xff")
    overwrite(garbage, 0, 16, schema.SQLITE_HEADER)
    before = snapshot(db_path)
    with pytest.raises(NotAStoreError, match=r"garbage\.db"):
        await SQLiteBlackboard.open(garbage)
    assert snapshot(db_path) == before


async def test_another_programs_database_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
    conn.commit()
    conn.close()
    before = snapshot(path)
    with pytest.raises(NotAStoreError, match="not an orchestra store"):
        await SQLiteBlackboard.open(path)
    assert snapshot(path) == before


async def test_a_corrupt_row_raises_instead_of_being_skipped(db_path: Path) -> None:
    await make_store(db_path)
    conn = sqlite3.connect(db_path)
    conn.execute("UPDATE tasks SET input = '{not json'")
    conn.execute("UPDATE events SET data = 'nope' WHERE seq = 2")
    conn.commit()
    conn.close()
    async with await SQLiteBlackboard.open(db_path) as store:
        [run] = await store.list_runs()
        with pytest.raises(StoreError, match=r"tasks row '\w+' is unreadable: column input"):
            await store.list_tasks(run.id)
        with pytest.raises(StoreError, match=r"events row .* unreadable"):
            await store.events(run.id)
