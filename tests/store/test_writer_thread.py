"""Writes run on the store's writer thread: the event loop never waits for SQLite.

Two hazards, each tested on a real file: a write lock held by another process (the
loop must not sit in busy_timeout), and a coroutine that only writes (it must still
yield between writes). The suite's ``sql_on_loop`` guard checks the rest.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path

import pytest
from store_helpers import Statements, until

from orchestra._errors import StoreError
from orchestra.store import SQLiteBlackboard


async def test_a_lock_held_elsewhere_is_waited_for_off_the_loop(db_path: Path) -> None:
    statements = Statements()
    async with await SQLiteBlackboard.open(db_path, trace=statements) as store:
        run = await store.create_run("p", {})
        other = sqlite3.connect(db_path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
        with statements.counting() as (writes, _):
            try:
                write = asyncio.ensure_future(store.append_event(run.id, "blocked", {}))
                # the loop keeps running (this poll among it) while the writer tries
                # for the lock again and again
                await until(lambda: len(writes) >= 3, "the writer's third try for the lock")
                assert not write.done()
            finally:
                other.execute("COMMIT")
                other.close()
            event = await asyncio.wait_for(write, 10.0)
        assert event.kind == "blocked"
        # the writer is not stuck: the next write follows in order
        assert (await store.append_event(run.id, "after", {})).seq == event.seq + 1


async def test_a_coroutine_that_only_writes_lets_others_run(store: SQLiteBlackboard) -> None:
    run = await store.create_run("p", {})
    ran = asyncio.Event()

    async def writer() -> int:
        n = 0
        while not ran.is_set():
            await store.append_event(run.id, "tick", {"n": n})
            n += 1
            if n > 10_000:
                break
        return n

    async def other() -> None:
        ran.set()

    writes, _ = await asyncio.wait_for(asyncio.gather(writer(), other()), 30.0)
    assert writes < 10


async def test_full_durability_writes_from_the_thread(tmp_path: Path) -> None:
    async with await SQLiteBlackboard.open(tmp_path / "f.db", durability="full") as store:
        run = await store.create_run("p", {})
        got = await asyncio.gather(*(store.append_event(run.id, "e", {"i": i})
                                     for i in range(20)))
        assert sorted(e.seq for e in got) == list(range(2, 22))


async def test_a_write_waits_for_the_lock_until_busy_timeout_then_fails_cleanly(
        tmp_path: Path) -> None:
    """The writer tries for the lock in short tries (so it takes the lock soon after it
    frees) until the store's whole busy_timeout has passed, not only the first try."""
    db = tmp_path / "locked.db"
    async with await SQLiteBlackboard.open(db, busy_timeout=0.3) as store:
        run = await store.create_run("p", {})
        other = sqlite3.connect(db, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        try:
            began = time.monotonic()
            with pytest.raises(StoreError, match="write lock past busy_timeout"):
                await store.append_event(run.id, "blocked", {})
            assert time.monotonic() - began >= 0.3
        finally:
            other.execute("ROLLBACK")
            other.close()
        assert [e.kind for e in await store.events(run.id)] == ["run.created"]
        assert (await store.append_event(run.id, "after", {})).seq == 2


async def test_a_batch_the_writer_cannot_run_fails_its_writes_and_the_next_go_through(
        store: SQLiteBlackboard, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fault in running a batch (not in a write) fails that batch's writes with an error
    that says nothing was written; the writer goes on (its task used to die, and every
    later write waited for ever)."""
    from orchestra.store.sqlite import writer

    run = await store.create_run("p", {})
    real = writer.run_batch

    async def broken(*args: object, **kwargs: object) -> object:
        raise RuntimeError("the batch runner broke")

    monkeypatch.setattr(writer, "run_batch", broken)
    with pytest.raises(StoreError, match="nothing was written: the batch runner broke"):
        await asyncio.wait_for(store.append_event(run.id, "lost", {}), 10.0)
    monkeypatch.setattr(writer, "run_batch", real)
    event = await asyncio.wait_for(store.append_event(run.id, "kept", {}), 10.0)
    assert [e.kind for e in await store.events(run.id)] == ["run.created", event.kind]
