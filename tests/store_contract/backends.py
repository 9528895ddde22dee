"""The backends the store contract runs against: one entry per implementation.

A backend opens a fresh, empty store in a test's temporary directory and names it
with a ``spec`` string, so that child processes (``_child.py``) can open the same
store. A PostgreSQL backend adds one entry to ``BACKENDS`` (its ``fresh`` creating an
empty database or schema, ``open`` connecting to it) and runs this suite unchanged.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from orchestra._types import Run, Task
from orchestra.store import Blackboard, Lease, SQLiteBlackboard

Opener = Callable[..., Awaitable[Blackboard]]
"""The ``open_store`` fixture: ``await open_store(**options)`` -> a new handle."""
Claimed = Callable[..., Awaitable[tuple[Run, Task, Lease]]]
"""The ``claimed`` fixture: ``await claimed(role)`` -> (run, task, lease)."""


async def _open_sqlite(spec: str, **options: Any) -> Blackboard:
    return await SQLiteBlackboard.open(spec, **options)


def _damage_sqlite(spec: str, agent_id: str, seq: int) -> None:
    conn = sqlite3.connect(spec)
    with conn:
        conn.execute("UPDATE messages SET tool_calls = '{not json' WHERE agent_id = ? AND seq = ?",
                     (agent_id, seq))
    conn.close()


async def _open_postgres(spec: str, **options: Any) -> Blackboard:
    from orchestra.store.postgres import PostgresBlackboard

    return await PostgresBlackboard.open(spec, **options)


def _fresh_postgres(tmp: Path) -> str:
    """A new empty database on the session's PostgreSQL server (started on first use)."""
    from benchmarks.postgres.local import PostgresUnavailable, shared_server

    try:
        server = shared_server()
    except PostgresUnavailable as exc:
        pytest.skip(f"no PostgreSQL server here: {exc}")
    return server.create_database("t" + os.urandom(6).hex())


def _damage_postgres(spec: str, agent_id: str, seq: int) -> None:
    import asyncpg

    async def damage() -> None:
        conn = await asyncpg.connect(spec)
        try:
            await conn.execute("UPDATE messages SET tool_calls = '{not json' "
                               "WHERE agent_id = $1 AND seq = $2", agent_id, seq)
        finally:
            await conn.close()

    # called from a running test loop: run the connection on a loop of its own
    worker = threading.Thread(target=asyncio.run, args=(damage(),))
    worker.start()
    worker.join()


@dataclass(frozen=True)
class Backend:
    name: str
    fresh: Callable[[Path], str]
    """Make an empty store under a temporary directory; return its spec."""
    open: Callable[..., Awaitable[Blackboard]]
    """``await open(spec, max_payload_bytes=...)``: a new handle on the store."""
    damage: Callable[[str, str, int], None]
    """Make message ``seq`` of an agent unreadable, behind the store's back (a bad file)."""


BACKENDS: dict[str, Backend] = {
    "sqlite": Backend("sqlite", lambda tmp: str(tmp / "contract.db"), _open_sqlite,
                      _damage_sqlite),
    "postgres": Backend("postgres", _fresh_postgres, _open_postgres, _damage_postgres),
}
