"""What the PostgreSQL store adds beyond the contract: choosing it by URL, its schema
versioning, the database's clock for leases, NOTIFY-driven follow, and the password
never leaving the process."""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path

import asyncpg
import pytest
from pg_helpers import until, with_password

from orchestra._errors import NotAStoreError, SchemaVersionError, StoreError, UserError
from orchestra.store import NewTask, SQLiteBlackboard
from orchestra.store.postgres import PostgresBlackboard
from orchestra.store.postgres import schema as pg_schema
from orchestra.store.postgres.dsn import redact
from orchestra.store.postgres.store import StoreStats as PgStoreStats
from orchestra.store.url import label, open_store


async def test_one_string_picks_the_backend(dsn: str, tmp_path: Path) -> None:
    for spec in (str(tmp_path / "a.db"), f"sqlite:{tmp_path / 'b.db'}"):
        store = await open_store(spec)
        assert isinstance(store, SQLiteBlackboard)
        await store.close()
    assert (tmp_path / "b.db").exists()
    store = await open_store(dsn)
    assert isinstance(store, PostgresBlackboard)
    await store.close()
    with pytest.raises(UserError, match="unknown store scheme 'mysql'"):
        await open_store("mysql://u:p@h/db")


async def test_the_password_never_reaches_messages(dsn: str) -> None:
    secret = "s3cr3t-pw"
    assert secret not in redact(with_password(dsn, secret))
    assert secret not in label(with_password(dsn, secret))
    assert redact("postgresql://h/db?user=u&password=" + secret).endswith("password=***")
    store = await open_store(with_password(dsn, secret))
    assert secret not in store.url  # type: ignore[attr-defined]
    await store.close()
    closed = with_password(dsn, secret).replace(dsn.split("@")[1].split("/")[0], "127.0.0.1:1")
    with pytest.raises(StoreError, match="cannot connect") as err:
        await open_store(closed)
    assert secret not in str(err.value) and "127.0.0.1:1" in str(err.value)


async def test_a_newer_schema_is_refused_untouched(dsn: str) -> None:
    await (await open_store(dsn)).close()
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute("UPDATE orchestra_schema SET version = 99")
        with pytest.raises(SchemaVersionError, match=r"version 99.*newer orchestra"):
            await open_store(dsn)
        assert await conn.fetchval("SELECT version FROM orchestra_schema") == 99
    finally:
        await conn.close()


async def test_another_programs_tables_are_refused_untouched(dsn: str) -> None:
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute("CREATE TABLE invoices (id int)")
        with pytest.raises(NotAStoreError, match="invoices"):
            await open_store(dsn)
        tables = await conn.fetch("SELECT table_name FROM information_schema.tables "
                                  "WHERE table_schema = 'public'")
        assert [r[0] for r in tables] == ["invoices"]
    finally:
        await conn.close()


async def test_a_failed_migration_leaves_the_version_as_it_was(dsn: str) -> None:
    await (await open_store(dsn)).close()
    conn = await asyncpg.connect(dsn)
    try:
        bad = (*pg_schema.MIGRATIONS, "CREATE TABLE half_done (id int); SELECT no_such_column")
        with pytest.raises(StoreError, match=f"stays at version {pg_schema.LATEST_VERSION}"):
            await pg_schema.migrate(conn, "test", migrations=bad)
        version = await conn.fetchval("SELECT version FROM orchestra_schema")
        assert version == pg_schema.LATEST_VERSION
        assert await conn.fetchval("SELECT to_regclass('half_done')") is None
        with pytest.raises(SchemaVersionError, match="pending"):
            await pg_schema.migrate(conn, "test", verify_only=True, migrations=bad)
    finally:
        await conn.close()


async def test_leases_follow_the_database_clock_not_the_hosts(
        dsn: str, monkeypatch: pytest.MonkeyPatch) -> None:
    store = await PostgresBlackboard.open(dsn)
    try:
        run = await store.create_run("p", {}, tasks=[NewTask("a", {})])
        task = await store.claim_task("w", run_id=run.id, lease_seconds=30)
        assert task is not None
        real = time.time
        monkeypatch.setattr(time, "time", lambda: real() + 3600)  # this host runs an hour ahead
        assert await store.release_leases() == []  # the lease is live by the database's clock
        again = await store.claim_task("w2", run_id=run.id, lease_seconds=0.01)
        assert again is None
    finally:
        await store.close()


async def test_follow_is_woken_by_notify_from_another_handle(dsn: str) -> None:
    sent: list[str] = []
    a = await PostgresBlackboard.open(dsn, trace=lambda conn, sql: sent.append(sql))
    b = await PostgresBlackboard.open(dsn)
    try:
        run = await a.create_run("p", {})
        seen: list[str] = []

        async def follow() -> None:
            # a poll would take safety_interval (60 s) to see it
            following = a.follow(run.id, starting_after=1, safety_interval=60)
            async with contextlib.aclosing(following) as events:
                async for event in events:
                    seen.append(event.kind)
                    return

        follower = asyncio.create_task(follow())
        # the follower LISTENs, then reads (nothing yet), then waits
        await until(lambda: any(" FROM events " in sql for sql in sent), "the follower's read")
        assert a.stats() == PgStoreStats(followers=1, listening=True)
        await b.append_event(run.id, "ping", {})
        async with asyncio.timeout(20):  # well within safety_interval: NOTIFY woke it
            await follower
        assert seen == ["ping"]
        assert a.stats().followers == 0
    finally:
        await a.close()
        await b.close()
