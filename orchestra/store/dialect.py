"""The driver and the dialect a SQL function written once for both backends takes.

The driver is asyncpg's way of calling, which SQLite's ``Txn`` also offers
(``fetchrow``, ``fetchval``): a statement and its arguments, ``$1``-numbered. The
dialect is what differs in the SQL text itself: SQLite numbers its parameters ``?1``,
and only PostgreSQL locks the rows a write reads (SQLite's write holds the database).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Protocol

from orchestra.store.codec import Encoder

_NUMBERED = re.compile(r"\$(\d+)")


class Driver(Protocol):
    """One write transaction: its statements, its encoder and its clock reading."""

    @property
    def enc(self) -> Encoder: ...

    @property
    def now(self) -> float: ...

    async def fetchrow(self, sql: str, *args: Any) -> Any:
        """The statement's first row, or None."""

    async def fetchval(self, sql: str, *args: Any) -> Any:
        """The first column of the statement's first row, or None (none returned)."""


@dataclass(frozen=True, slots=True)
class Dialect:
    """How one backend writes the SQL shared functions are written in (PostgreSQL's)."""

    name: str
    numbered: str
    """What ``$n`` becomes: SQLite's ``?n`` binds the same n-th argument."""
    row_lock: str
    """Appended to a write's read of a row it then changes."""

    def sql(self, text: str) -> str:
        """``text`` (PostgreSQL's SQL, ``$1``-numbered, ``{lock}`` where a row is locked)
        as this backend writes it."""
        return _NUMBERED.sub(self.numbered, text).replace("{lock}", self.row_lock)


SQLITE = Dialect("sqlite", numbered=r"?\1", row_lock="")
POSTGRES = Dialect("postgres", numbered=r"$\1", row_lock=" FOR UPDATE")
