"""Opening a store read-only, and refusing a new store whose directory is unusable."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestra._errors import SchemaVersionError, StoreAccessError
from orchestra.store import NewTask, SQLiteBlackboard


async def test_read_only_reads_and_refuses_every_write(db_path: Path) -> None:
    async with await SQLiteBlackboard.open(db_path) as store:
        run = await store.create_run("p", {"x": 1}, tasks=[NewTask("a", 1)])
    before = db_path.read_bytes()
    async with await SQLiteBlackboard.open(db_path, read_only=True) as store:
        assert (await store.get_run(run.id)).input == {"x": 1}
        assert [e.kind for e in await store.events(run.id)][:2] == ["run.created",
                                                                    "task.created"]
        with pytest.raises(StoreAccessError, match="opened read-only"):
            await store.create_run("p", {})
        with pytest.raises(StoreAccessError, match="opened read-only"):
            await store.set_run_status(run.id, "cancelled")
    assert db_path.read_bytes() == before


async def test_read_only_never_creates_a_store(db_path: Path) -> None:
    with pytest.raises(SchemaVersionError, match="read_only=True never creates one"):
        await SQLiteBlackboard.open(db_path, read_only=True)
    assert not db_path.exists()


async def test_a_new_store_in_a_missing_directory_is_refused_before_anything_is_made(
        tmp_path: Path) -> None:
    path = tmp_path / "nodir" / "x.db"
    with pytest.raises(StoreAccessError, match=r"directory .*nodir does not exist"):
        await SQLiteBlackboard.open(path)
    assert list(tmp_path.iterdir()) == []
