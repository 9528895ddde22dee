"""Plain-sqlite3 inspection helpers for the blackboard tests."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from orchestra._types import Run, Task
from orchestra.store import Lease

Claim = Callable[..., Awaitable[tuple[Run, Task, Lease]]]
"""The ``claimed`` fixture: ``await claimed(role)`` -> (run, task, lease)."""

TABLES = ("runs", "tasks", "plans", "handoffs", "notes", "agents", "messages", "compactions",
          "steps", "approvals", "events")


def count_rows(path: Path, run_id: str | None = None) -> dict[str, int]:
    """Rows per table (of one run when ``run_id`` is given), read with plain sqlite3."""
    conn = sqlite3.connect(path)
    try:
        counts = {}
        args: tuple[str, ...]
        for table in TABLES:
            if run_id is None:
                sql, args = f"SELECT COUNT(*) FROM {table}", ()
            elif table == "runs":
                sql, args = "SELECT COUNT(*) FROM runs WHERE id = ?", (run_id,)
            elif table in ("steps",):
                sql = ("SELECT COUNT(*) FROM steps WHERE task_id IN "
                       "(SELECT id FROM tasks WHERE run_id = ?)")
                args = (run_id,)
            elif table in ("messages", "compactions"):
                sql = (f"SELECT COUNT(*) FROM {table} WHERE agent_id IN "
                       "(SELECT id FROM agents WHERE run_id = ?)")
                args = (run_id,)
            else:
                sql, args = f"SELECT COUNT(*) FROM {table} WHERE run_id = ?", (run_id,)
            counts[table] = conn.execute(sql, args).fetchone()[0]
        return counts
    finally:
        conn.close()


def fts_consistent(path: Path) -> bool:
    """FTS5's own check that the notes index matches the notes table."""
    conn = sqlite3.connect(path)
    try:
        conn.execute("INSERT INTO notes_fts (notes_fts) VALUES ('integrity-check')")
        return True
    except sqlite3.DatabaseError:
        return False
    finally:
        conn.close()


def query(path: Path, sql: str, *args: object) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


class Statements:
    """A store's ``trace`` hook (``SQLiteBlackboard.open(trace=...)``) keeping the first
    line of each statement its writer and its reader send while :meth:`counting`."""

    def __init__(self) -> None:
        self._into: dict[str, list[str]] | None = None

    def __call__(self, connection: str, sql: str) -> None:
        if self._into is not None:
            self._into[connection].append(sql.strip().split("\n")[0])

    @contextmanager
    def counting(self) -> Iterator[tuple[list[str], list[str]]]:
        """The statements (writer's, reader's) sent while inside."""
        writes: list[str] = []
        reads: list[str] = []
        self._into = {"writer": writes, "reader": reads}
        try:
            yield writes, reads
        finally:
            self._into = None


async def until(check: Callable[[], object], what: str, within: float = 30.0) -> None:
    """Until ``check()`` is true (polled on the loop); fail naming ``what`` after ``within``
    seconds. For conditions nothing signals (another connection's progress)."""
    deadline = time.monotonic() + within
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.005)
