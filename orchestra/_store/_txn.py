"""The transaction object every ``_*_txn`` function takes: nothing about a write is hidden.

A write runs on one connection inside one transaction; what it needs besides the
connection travels with it explicitly: the encoder (payload limit), the clock
reading the whole write is stamped with, the open event batch (if the write batches
its events) and the claimer (if tasks it creates may be claimed as they are made).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from orchestra._store._codec import Encoder

if TYPE_CHECKING:
    from orchestra._store._event_txn import EventBatch
    from orchestra._store._task_txn import Claimer


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
