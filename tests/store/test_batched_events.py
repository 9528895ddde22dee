"""Batched event seqs: the same rows and seqs as one statement per event, or none at all."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import aiosqlite
import pytest

from orchestra._errors import NotFoundError
from orchestra.store import SQLiteBlackboard
from orchestra.store.codec import Encoder
from orchestra.store.sqlite.events import append_event, append_step_event, batched_events
from orchestra.store.sqlite.txn import Conn, Txn

ENC = Encoder(1 << 20)


@pytest.fixture
async def conn(tmp_path: Path) -> AsyncIterator[Conn]:
    store = await SQLiteBlackboard.open(tmp_path / "b.db")
    for run_id in ("a", "b"):
        await store.create_run("p", {}, run_id=run_id)
    await store.close()
    connection = await aiosqlite.connect(tmp_path / "b.db", isolation_level=None)
    yield Conn(connection)
    await connection.close()


async def _log(conn: Conn) -> list[tuple[str, int, str]]:
    return (await conn.execute("SELECT run_id, seq, kind FROM events ORDER BY run_id, seq")
            ).fetchall()


async def _run(conn: Conn, run_id: str) -> tuple[int, int, int, int]:
    found = await conn.execute(
        "SELECT last_seq, tokens_in, tokens_out, steps FROM runs WHERE id = ?", (run_id,))
    return tuple(found.fetchone())


async def test_a_batch_writes_what_single_events_would(conn: Conn) -> None:
    before = {r: (await _run(conn, r))[0] for r in ("a", "b")}
    await conn.execute("BEGIN IMMEDIATE")
    tx = Txn(conn, ENC, 1.0)
    async with batched_events(tx):
        seqs = [(await append_event(tx, "a", "x.one", {})).seq,
                (await append_step_event(tx, "b", "step.completed", {}, tokens_in=3, tokens_out=4,
                                  cost=0.0)).seq,
                (await append_step_event(tx, "a", "step.completed", {}, tokens_in=5, tokens_out=6,
                                  cost=0.0)).seq]
        async with batched_events(tx):  # nested: joins the outer batch
            seqs.append((await append_event(tx, "a", "x.two", {"k": 1})).seq)
    assert tx.events is None  # the batch lives on the transaction object, and ends with it
    await conn.execute("COMMIT")
    a, b = before["a"], before["b"]
    assert seqs == [a + 1, b + 1, a + 2, a + 3]
    assert (await _run(conn, "a")) == (a + 3, 5, 6, 1)
    assert (await _run(conn, "b")) == (b + 1, 3, 4, 1)
    assert [e for e in (await _log(conn)) if e[1] > before[e[0]]] == [
        ("a", a + 1, "x.one"), ("a", a + 2, "step.completed"), ("a", a + 3, "x.two"),
        ("b", b + 1, "step.completed")]


async def test_a_batch_that_raises_writes_nothing_and_takes_no_seq(conn: Conn) -> None:
    log, last = (await _log(conn)), (await _run(conn, "a"))
    await conn.execute("BEGIN IMMEDIATE")
    tx = Txn(conn, ENC, 1.0)
    with pytest.raises(RuntimeError):
        async with batched_events(tx):
            await append_event(tx, "a", "x.one", {})
            await append_event(tx, "a", "x.two", {})
            raise RuntimeError("boom")
    await conn.execute("ROLLBACK")
    assert ((await _log(conn)), (await _run(conn, "a"))) == (log, last)
    await conn.execute("BEGIN IMMEDIATE")
    tx = Txn(conn, ENC, 1.0)
    async with batched_events(tx):  # a new transaction starts with no batch
        assert (await append_event(tx, "a", "x.three", {})).seq == last[0] + 1
    await conn.execute("COMMIT")


async def test_an_unknown_run_is_refused_in_a_batch(conn: Conn) -> None:
    await conn.execute("BEGIN IMMEDIATE")
    tx = Txn(conn, ENC, 1.0)
    with pytest.raises(NotFoundError, match="'nope'"):
        async with batched_events(tx):
            await append_event(tx, "nope", "x", {})
    await conn.execute("ROLLBACK")
