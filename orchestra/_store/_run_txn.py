"""Runs: create, change status (cancelling fences every live task), delete (retention)."""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Sequence

from orchestra._errors import NotFoundError, UserError
from orchestra._store import _rows
from orchestra._store._codec import Encoder, new_id, short
from orchestra._store._event_txn import append_event, require_run
from orchestra._store._task_txn import insert_tasks
from orchestra._store.protocol import NewTask
from orchestra._types import JSON, RUN_STATUSES, Run, RunStatus, Task

_INSERT = (
    "INSERT INTO runs (id, pipeline, input, status, created_at, updated_at) "
    "VALUES (?, ?, ?, 'pending', ?, ?)"
)
_EXISTS = "SELECT 1 FROM runs WHERE id = ?"
_STATUS = "SELECT status FROM runs WHERE id = ?"
_GET = f"SELECT {_rows.RUN_COLS} FROM runs WHERE id = ?"
_SET_STATUS = "UPDATE runs SET status = ?, error = ?, updated_at = ? WHERE id = ?"
_CANCEL_TASKS = (
    "UPDATE tasks SET status = 'cancelled', lease_owner = NULL, lease_expires_at = NULL, "
    "updated_at = ? WHERE run_id = ? AND status IN ('pending', 'running', 'waiting') "
    "RETURNING id, role"
)
_STATUSES = frozenset(RUN_STATUSES)


def create_run(conn: sqlite3.Connection, enc: Encoder, pipeline: str, input: JSON,
               run_id: str | None, tasks: Sequence[NewTask], now: float) -> Run:
    run_id = new_id(12) if run_id is None else run_id
    if not run_id or "/" in run_id:
        raise UserError(f"run_id must be a non-empty string without '/' (agent ids are "
                        f"'run/role'), got {run_id!r}")
    if conn.execute(_EXISTS, (run_id,)).fetchone() is not None:
        raise UserError(f"run {run_id!r} already exists; choose another run_id or resume it")
    conn.execute(_INSERT, (run_id, pipeline, enc.json(input, f"input of run {run_id}"), now, now))
    append_event(conn, enc, run_id, "run.created", {"pipeline": pipeline}, now)
    insert_tasks(conn, enc, run_id, tasks, now, cause="run")
    return _rows.run(conn.execute(_GET, (run_id,)).fetchone())


def add_tasks(conn: sqlite3.Connection, enc: Encoder, run_id: str, tasks: Sequence[NewTask],
              now: float) -> list[Task]:
    require_run(conn, run_id)
    return insert_tasks(conn, enc, run_id, tasks, now)


def set_run_status(conn: sqlite3.Connection, enc: Encoder, run_id: str, status: RunStatus,
                   error: str | None, only_from: Collection[RunStatus] | None,
                   now: float) -> Run:
    """Change a run's status; ``cancelled`` also cancels its live tasks, fencing their workers."""
    if status not in _STATUSES:
        raise UserError(f"run status must be one of {sorted(_STATUSES)}, got {status!r}")
    row = conn.execute(_STATUS, (run_id,)).fetchone()
    if row is None:
        raise NotFoundError(f"run {run_id!r} does not exist")
    current = row[0]
    if only_from is not None and current not in only_from:
        raise UserError(
            f"run {run_id} is {current}; this change needs it to be one of "
            f"{sorted(only_from)}"
        )
    error_text = enc.optional_text(error, f"error of run {run_id}")
    conn.execute(_SET_STATUS, (status, error_text, now, run_id))
    append_event(conn, enc, run_id, f"run.{status}",
                 {"status": status, "previous": current, "error": short(error)}, now)
    if status == "cancelled":
        for task_id, role in conn.execute(_CANCEL_TASKS, (now, run_id)).fetchall():
            append_event(conn, enc, run_id, "task.cancelled", {"task": task_id, "role": role}, now)
    return _rows.run(conn.execute(_GET, (run_id,)).fetchone())
