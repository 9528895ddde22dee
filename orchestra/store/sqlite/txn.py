"""The transaction object every write function takes: nothing about a write is hidden.

A write runs on one connection inside one transaction; what it needs besides the
connection travels with it explicitly: the encoder (payload limit), the clock
reading the whole write is stamped with, the open event batch (if the write batches
its events) and the claimer (if tasks it creates may be claimed as they are made).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from orchestra._types import Task
from orchestra.store.codec import Encoder


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

    Used by ``complete_task_and_claim`` once the run's older pending tasks are claimed
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

    def __init__(self, conn: sqlite3.Connection, enc: Encoder, now: float, *,
                 claimer: Claimer | None = None) -> None:
        self.conn = conn
        self.enc = enc
        self.now = now
        self.events: EventBatch | None = None
        self.claimer = claimer

    def execute(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        return self.conn.execute(sql, params)

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> sqlite3.Cursor:
        return self.conn.executemany(sql, rows)

    @contextmanager
    def claiming(self, claimer: Claimer) -> Iterator[Claimer]:
        """Tasks created inside the block are claimed by ``claimer`` while it has room."""
        outer, self.claimer = self.claimer, claimer
        try:
            yield claimer
        finally:
            self.claimer = outer
