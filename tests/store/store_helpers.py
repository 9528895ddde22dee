"""Plain-sqlite3 inspection helpers for the blackboard tests."""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable
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
