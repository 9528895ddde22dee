"""The transaction object every PostgreSQL write function takes, as SQLite's do
(``sqlite/txn.py``): nothing about a write is hidden.

A write runs on one pooled connection inside one transaction; what it needs besides
the connection travels with it explicitly: the encoder (payload limit) and the
database's clock, read once when the transaction began (``now()``), which the whole
write is stamped with and compares leases against. Writes that are ONE statement
outside an explicit transaction (``*_at_once``, ``step.end_step``) have no such
reading (the statement reads ``now()`` itself) and take the connection alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import asyncpg

from orchestra.store.codec import Encoder


@dataclass(frozen=True, slots=True)
class Txn:
    """One write: ``conn`` (in a transaction), ``enc``, and ``now``, the database's clock."""

    conn: asyncpg.Connection
    enc: Encoder
    now: float

    async def execute(self, sql: str, *args: Any) -> str:
        return await self.conn.execute(sql, *args)

    async def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        await self.conn.executemany(sql, rows)

    async def fetch(self, sql: str, *args: Any) -> list[asyncpg.Record]:
        return await self.conn.fetch(sql, *args)

    async def fetchrow(self, sql: str, *args: Any) -> asyncpg.Record | None:
        return await self.conn.fetchrow(sql, *args)

    async def fetchval(self, sql: str, *args: Any) -> Any:
        return await self.conn.fetchval(sql, *args)
