"""The store runs no SQL on the event loop: the guard of the store suite (``sql_on_loop``,
in ``tests/conftest.py``) catches a deliberate violation, and a store at work makes none."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from orchestra.store import NewTask, SQLiteBlackboard
from orchestra.store.sqlite import schema
from orchestra.store.sqlite.open import open_writer


async def test_the_guard_catches_store_sql_run_on_the_loop(sql_on_loop: list[str],
                                                            db_path: Path) -> None:
    # the old design's lone inline write, in miniature: open and query on the loop itself
    conn = open_writer(str(db_path), durability="normal", busy_timeout=1.0,
                       verify_only=False)
    assert sql_on_loop  # connect, configure and migrate ran here
    sql_on_loop.clear()
    assert schema.read_version(conn, str(db_path)) == schema.LATEST_VERSION
    assert sql_on_loop and all(v.startswith("orchestra.store") for v in sql_on_loop)
    with pytest.raises(AssertionError, match="SQLite was called on the event loop's thread"):
        sql_on_loop.assert_none()  # type: ignore[attr-defined]
    sql_on_loop.clear()
    conn.close()
    sql_on_loop.clear()
    # the same calls on another thread are fine
    assert await asyncio.to_thread(_open_and_read, db_path) == schema.LATEST_VERSION
    assert sql_on_loop == []


def _open_and_read(db_path: Path) -> int:
    conn = open_writer(str(db_path), durability="normal", busy_timeout=1.0,
                       verify_only=False)
    try:
        return schema.read_version(conn, str(db_path))
    finally:
        conn.close()


async def test_a_store_at_work_runs_no_sql_on_the_loop(sql_on_loop: list[str],
                                                       db_path: Path) -> None:
    async with await SQLiteBlackboard.open(db_path, durability="full") as store:
        run = await store.create_run("p", {}, tasks=[NewTask("a", 1)])
        await asyncio.gather(*(store.append_event(run.id, "e", {"i": i}) for i in range(20)))
        task = await store.claim_task("w", run_id=run.id)
        assert task is not None
        assert len(await store.events(run.id)) >= 21
    assert sql_on_loop == []
