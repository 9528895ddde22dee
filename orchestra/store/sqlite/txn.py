"""The transaction object every write function takes: nothing about a write is hidden.

A write runs on one connection inside one transaction; what it needs besides the
connection travels with it explicitly: the encoder (payload limit), the clock
reading the whole write is stamped with, the open event batch (if the write batches
its events) and the claimer (if tasks it creates may be claimed as they are made).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import aiosqlite

from orchestra._errors import StoreError
from orchestra._types import Task
from orchestra.store.codec import Encoder
from orchestra.store.protocol import StatementTrace


class NeedsTransaction(StoreError):
    """A write run without a transaction (``Writer.write(one_statement=True)``) found it
    must do more than one statement's change; it wrote nothing, and the writer runs it
    again inside a transaction."""


class Rows:
    """A statement's whole result, fetched in the same hop to the connection's thread."""

    __slots__ = ("rows",)

    def __init__(self, rows: Iterable[Any]) -> None:
        self.rows = list(rows)

    def fetchone(self) -> Any:
        return self.rows[0] if self.rows else None

    def fetchall(self) -> list[Any]:
        return self.rows

    def __iter__(self) -> Iterator[Any]:
        return iter(self.rows)


class Conn:
    """An aiosqlite connection on which each statement is one awaited call that returns its
    rows (``execute_fetchall``): no cursor outlives its statement, none crosses threads."""

    __slots__ = ("db",)

    def __init__(self, db: aiosqlite.Connection) -> None:
        self.db = db

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> Rows:
        return Rows(await self.db.execute_fetchall(sql, params))

    async def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        await self.db.executemany(sql, rows)

    @property
    def in_transaction(self) -> bool:
        return self.db.in_transaction


class TracedConn(Conn):
    """A :class:`Conn` that tells a store's ``trace`` hook (``StatementTrace``) each
    statement as it sends it, naming itself (``"writer"``, ``"reader"``). Only a store
    opened with ``trace=`` uses it: the others pay nothing per statement."""

    __slots__ = ("name", "trace")

    def __init__(self, db: aiosqlite.Connection, trace: StatementTrace, name: str) -> None:
        super().__init__(db)
        self.trace = trace
        self.name = name

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> Rows:
        self.trace(self.name, sql)
        return await super().execute(sql, params)

    async def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self.trace(self.name, sql)
        await super().executemany(sql, rows)


class RunTally:
    """What a batch owes one run's row: its last seq and the step totals to add."""

    __slots__ = ("cost", "first", "seq", "steps", "tokens_in", "tokens_out")

    def __init__(self, seq: int) -> None:
        self.first = self.seq = seq
        self.tokens_in = self.tokens_out = self.steps = 0
        self.cost = 0.0


class EventBatch:
    """Events of one write held back until its end (see :func:`batched_events`)."""

    __slots__ = ("rows", "runs")

    def __init__(self) -> None:
        self.runs: dict[str, RunTally] = {}
        self.rows: list[tuple[str, int, str, str, float]] = []


class Claimer:
    """A worker's free capacity, spent on tasks as its own transaction creates them.

    Used by ``complete_task(..., claim=...)`` once the run's older pending tasks are claimed
    (so oldest-first still holds): a task the finishing task routes is inserted
    already leased, instead of being inserted pending, entered in the claim queue's
    index, and updated again by a claim. Callers announce ``claimed`` afterwards.
    """

    __slots__ = ("capacity", "claimed", "lease_seconds", "limit", "owner")

    def __init__(self, owner: str, capacity: dict[str, int], limit: int,
                 lease_seconds: float) -> None:
        self.owner = owner
        self.capacity = capacity
        self.limit = limit
        self.lease_seconds = lease_seconds
        self.claimed: list[Task] = []

    def take(self, role: str, not_before: float, now: float) -> bool:
        if self.limit <= 0 or self.capacity.get(role, 0) <= 0 or not_before > now:
            return False
        self.capacity[role] -= 1
        self.limit -= 1
        return True


class Txn:
    """One write: ``conn`` (in a transaction), ``enc``, ``now``, ``events``, ``claimer``."""

    __slots__ = ("claimer", "conn", "enc", "events", "now")

    def __init__(self, conn: Conn, enc: Encoder, now: float, *,
                 claimer: Claimer | None = None) -> None:
        self.conn = conn
        self.enc = enc
        self.now = now
        self.events: EventBatch | None = None
        self.claimer = claimer

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> Rows:
        return await self.conn.execute(sql, params)

    async def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        await self.conn.executemany(sql, rows)

    async def fetchrow(self, sql: str, *args: Any) -> Any:
        """The statement's first row, or None: asyncpg's call, for the SQL functions
        written once for both backends (``store/dialect.py``)."""
        return (await self.conn.execute(sql, args)).fetchone()

    async def fetchval(self, sql: str, *args: Any) -> Any:
        """The first column of the statement's first row, or None (asyncpg's call)."""
        row = (await self.conn.execute(sql, args)).fetchone()
        return None if row is None else row[0]

    @contextmanager
    def claiming(self, claimer: Claimer) -> Iterator[Claimer]:
        """Tasks created inside the block are claimed by ``claimer`` while it has room."""
        outer, self.claimer = self.claimer, claimer
        try:
            yield claimer
        finally:
            self.claimer = outer
