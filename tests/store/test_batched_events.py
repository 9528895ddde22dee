"""Batched event seqs: the same rows and seqs as one statement per event, or none at all."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from orchestra._errors import NotFoundError
from orchestra.store import SQLiteBlackboard
from orchestra.store.codec import Encoder
from orchestra.store.sqlite.events import append_event, append_step_event, batched_events
from orchestra.store.sqlite.txn import Txn

ENC = Encoder(1 << 20)


@pytest.fixture
async def conn(tmp_path: Path) -> AsyncIterator[sqlite3.Connection]:
    store = await SQLiteBlackboard.open(tmp_path / "b.db")
    for run_id in ("a", "b"):
        await store.create_run("p", {}, run_id=run_id)
    await store.close()
    connection = sqlite3.connect(tmp_path / "b.db", isolation_level=None)
    yield connection
    connection.close()


def _log(conn: sqlite3.Connection) -> list[tuple[str, int, str]]:
    return conn.execute("SELECT run_id, seq, kind FROM events ORDER BY run_id, seq").fetchall()


def _run(conn: sqlite3.Connection, run_id: str) -> tuple[int, int, int, int]:
    return conn.execute("SELECT last_seq, tokens_in, tokens_out, steps FROM runs WHERE id = ?",
                        (run_id,)).fetchone()


def test_a_batch_writes_what_single_events_would(conn: sqlite3.Connection) -> None:
    before = {r: _run(conn, r)[0] for r in ("a", "b")}
    conn.execute("BEGIN IMMEDIATE")
    tx = Txn(conn, ENC, 1.0)
    with batched_events(tx):
        seqs = [append_event(tx, "a", "x.one", {}).seq,
                append_step_event(tx, "b", "step.completed", {}, tokens_in=3, tokens_out=4,
                                  cost=0.0).seq,
                append_step_event(tx, "a", "step.completed", {}, tokens_in=5, tokens_out=6,
                                  cost=0.0).seq]
        with batched_events(tx):  # nested: joins the outer batch
            seqs.append(append_event(tx, "a", "x.two", {"k": 1}).seq)
    assert tx.events is None  # the batch lives on the transaction object, and ends with it
    conn.execute("COMMIT")
    a, b = before["a"], before["b"]
    assert seqs == [a + 1, b + 1, a + 2, a + 3]
    assert _run(conn, "a") == (a + 3, 5, 6, 1)
    assert _run(conn, "b") == (b + 1, 3, 4, 1)
    assert [e for e in _log(conn) if e[1] > before[e[0]]] == [
        ("a", a + 1, "x.one"), ("a", a + 2, "step.completed"), ("a", a + 3, "x.two"),
        ("b", b + 1, "step.completed")]


def test_a_batch_that_raises_writes_nothing_and_takes_no_seq(conn: sqlite3.Connection) -> None:
    log, last = _log(conn), _run(conn, "a")
    conn.execute("BEGIN IMMEDIATE")
    tx = Txn(conn, ENC, 1.0)
    with pytest.raises(RuntimeError), batched_events(tx):
        append_event(tx, "a", "x.one", {})
        append_event(tx, "a", "x.two", {})
        raise RuntimeError("boom")
    conn.execute("ROLLBACK")
    assert (_log(conn), _run(conn, "a")) == (log, last)
    conn.execute("BEGIN IMMEDIATE")
    tx = Txn(conn, ENC, 1.0)
    with batched_events(tx):  # a new transaction starts with no batch
        assert append_event(tx, "a", "x.three", {}).seq == last[0] + 1
    conn.execute("COMMIT")


def test_an_unknown_run_is_refused_in_a_batch(conn: sqlite3.Connection) -> None:
    conn.execute("BEGIN IMMEDIATE")
    tx = Txn(conn, ENC, 1.0)
    with pytest.raises(NotFoundError, match="'nope'"), batched_events(tx):
        append_event(tx, "nope", "x", {})
    conn.execute("ROLLBACK")
