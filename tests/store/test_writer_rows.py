"""A batch's one-row writes go to SQLite as one multi-row ``INSERT`` (one hop, the write
lock held only inside SQLite); a statement that fails sends its writes the general way,
where each one's own outcome is found. On a real file, with the statements counted."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import aiosqlite
import pytest

from orchestra.store.sqlite.txn import Conn, Rows
from orchestra.store.sqlite.writer import Row, Writer

_INSERT = "INSERT INTO t (k, v) VALUES"


class _Counted(Conn):
    __slots__ = ("sent",)

    def __init__(self, db: aiosqlite.Connection) -> None:
        super().__init__(db)
        self.sent: list[str] = []

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> Rows:
        self.sent.append(sql)
        return await super().execute(sql, params)


@pytest.fixture
async def conn(tmp_path: Path) -> AsyncIterator[_Counted]:
    db = await aiosqlite.connect(tmp_path / "w.db", isolation_level=None)
    # v must be positive: a row that is not is refused, and with it its whole statement
    await db.execute("CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER NOT NULL CHECK (v > 0))")
    counted = _Counted(db)
    try:
        yield counted
    finally:
        await db.close()


def _write(writer: Writer, key: str, value: int, *, refused: list[str] | None = None,
           row: bool = True) -> Any:
    """A write that is the row (key, value); its op inserts it alone (the general way)."""

    async def op(c: Conn) -> str:
        await c.execute("INSERT INTO t (k, v) VALUES (?, ?)", (key, value))
        return f"op {key}"

    def prepare() -> Row:
        return Row(_INSERT, (key, value), (key,), lambda: f"row {key}",
                   lambda exc: (refused if refused is not None else []).append(key))

    return writer.write(op, row=prepare if row else None)


async def _values(conn: Conn) -> dict[str, int]:
    return dict((await conn.execute("SELECT k, v FROM t")).fetchall())


async def test_a_batch_of_rows_is_one_statement(conn: _Counted) -> None:
    writer = Writer(conn)
    try:
        futures = [_write(writer, f"k{i}", i + 1) for i in range(5)]  # queued: one batch
        assert [await f for f in futures] == [f"row k{i}" for i in range(5)]
    finally:
        await writer.close()
    assert conn.sent == [f"{_INSERT} (?, ?), (?, ?), (?, ?), (?, ?), (?, ?)"]


async def test_a_refused_row_is_found_by_halves_and_runs_the_general_way(
        conn: _Counted) -> None:
    refused: list[str] = []
    writer = Writer(conn)
    try:
        futures = [_write(writer, k, v, refused=refused)
                   for k, v in (("a", 1), ("b", -1), ("c", 3), ("d", 4))]
        assert [await futures[i] for i in (0, 2, 3)] == ["row a", "row c", "row d"]
        with pytest.raises(sqlite3.IntegrityError, match="CHECK"):
            await futures[1]  # its op, alone, found why
        assert refused == ["b"]
        assert await _values(conn) == {"a": 1, "c": 3, "d": 4}  # each committed once
    finally:
        await writer.close()
    rows = [s.count("(?, ?)") for s in conn.sent if s.startswith(_INSERT + " (")]
    # all four (refused); a-b (refused): a, then b alone (refused); c-d; then b's op
    assert rows == [4, 2, 1, 1, 2, 1], conn.sent
    assert conn.sent[-4:-1] == ["BEGIN IMMEDIATE", f"{_INSERT} (?, ?)", "ROLLBACK"]  # its op


async def test_rows_sharing_a_key_never_share_a_statement(conn: _Counted) -> None:
    writer = Writer(conn)
    try:
        first, second = _write(writer, "a", 1), _write(writer, "a", 2)
        assert await first == "row a"
        with pytest.raises(sqlite3.IntegrityError, match="UNIQUE"):
            await second  # ran as its op, after the first row committed
        assert await _values(conn) == {"a": 1}
    finally:
        await writer.close()


async def test_rows_past_the_variable_limit_are_split(conn: _Counted) -> None:
    writer = Writer(conn, variables=6)  # three rows of two values per statement
    try:
        futures = [_write(writer, f"k{i}", i + 1) for i in range(7)]
        assert [await f for f in futures] == [f"row k{i}" for i in range(7)]
        assert [s.count("(?, ?)") for s in conn.sent] == [3, 3, 1]
        assert len(await _values(conn)) == 7
    finally:
        await writer.close()


async def test_a_write_whose_row_cannot_be_made_fails_alone(conn: _Counted) -> None:
    writer = Writer(conn)

    def broken() -> Row:
        raise ValueError("payload too large")

    try:
        good = _write(writer, "a", 1)
        bad = writer.write(lambda c: c.execute("SELECT 1"), row=broken)
        plain = _write(writer, "b", 2, row=False)
        assert await good == "row a" and await plain == "op b"
        with pytest.raises(ValueError, match="payload too large"):
            await bad
        assert await _values(conn) == {"a": 1, "b": 2}
    finally:
        await writer.close()
