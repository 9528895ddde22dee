"""Runs: create, change status (cancelling fences every live task), delete (retention)."""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import replace
from typing import Any

from orchestra._errors import NotFoundError, UserError
from orchestra._types import JSON, RUN_STATUSES, Run, RunStatus, Task
from orchestra.store import rows as _rows
from orchestra.store.codec import new_id, short
from orchestra.store.protocol import NewTask
from orchestra.store.sqlite.events import (
    append_event,
    batched_events,
    insert_event,
    new_run,
    require_run,
)
from orchestra.store.sqlite.tasks import insert_tasks
from orchestra.store.sqlite.txn import Txn
from orchestra.store.sqlite.writer import Row

# A taken id inserts nothing and returns no row (one statement, not a check and an insert)
_INSERT = (
    "INSERT INTO runs (id, pipeline, input, status, created_at, updated_at, version) "
    "VALUES (?, ?, ?, 'pending', ?, ?, ?) ON CONFLICT (id) DO NOTHING "
    f"RETURNING {_rows.RUN_COLS}"
)
_GET = f"SELECT {_rows.RUN_COLS} FROM runs WHERE id = ?"
_SET_STATUS = "UPDATE runs SET status = ?, error = ?, updated_at = ? WHERE id = ?"
# The status change and its event's seq in one statement (the row is the run returned)
_SET_STATUS_AND_SEQ = (
    "UPDATE runs SET status = ?, error = ?, updated_at = ?, last_seq = last_seq + 1 "
    f"WHERE id = ? RETURNING {_rows.RUN_COLS}"
)
_CANCEL_TASKS = (
    "UPDATE tasks SET status = 'cancelled', lease_owner = NULL, lease_expires_at = NULL, "
    "updated_at = ? WHERE run_id = ? AND status IN ('pending', 'running', 'waiting') "
    "RETURNING id, role"
)
_CANCEL_STEPS = """
UPDATE steps SET status = 'cancelled', error = 'the run was cancelled', finished_at = ?1
WHERE status = 'started' AND task_id IN (
    SELECT id FROM tasks WHERE run_id = ?2 AND status IN ('pending', 'running', 'waiting'))
RETURNING task_id, step, kind, name"""
_STATUSES = frozenset(RUN_STATUSES)


async def create_run(tx: Txn, pipeline: str, input: JSON,
               run_id: str | None, tasks: Sequence[NewTask], settings: JSON = None,
               version: str = "", manifest: JSON = None) -> Run:
    run_id = new_id(12) if run_id is None else run_id
    if not run_id or "/" in run_id:
        raise UserError(f"run_id must be a non-empty string without '/' (agent ids are "
                        f"'run/role'), got {run_id!r}")
    text = tx.enc.json(input, f"input of run {run_id}")
    created: dict[str, JSON] = {"pipeline": pipeline}
    if settings is not None:
        created["settings"] = settings
    if version:
        created["version"] = manifest if manifest is not None else {"id": version}
    async with batched_events(tx):  # the run's events: one UPDATE and one executemany
        row = (await tx.execute(_INSERT, (run_id, pipeline, text, tx.now, tx.now,
                                          version))).fetchone()
        if row is None:
            raise UserError(f"run {run_id!r} already exists; choose another run_id or resume it")
        tally = new_run(tx, run_id)
        await append_event(tx, run_id, "run.created", created)
        await insert_tasks(tx, run_id, tasks, cause="run")
    return _returned(row, last_seq=tally.seq)


def _returned(row: tuple[Any, ...], **changed: Any) -> Run:
    """The run of a row a write returned (``RETURNING`` hands back a REAL 0.0 as the int 0)."""
    run = _rows.run(row)
    return replace(run, cost=float(run.cost), **changed)


async def add_tasks(tx: Txn, run_id: str, tasks: Sequence[NewTask]) -> list[Task]:
    await require_run(tx, run_id)
    return await insert_tasks(tx, run_id, tasks)


_STATUS_CHANGE = "INSERT INTO run_status_changes (run_id, status, only_from, at) VALUES"


def status_row(run_id: str, status: RunStatus, error: str | None,
               only_from: Collection[RunStatus] | None, now: float) -> Row | None:
    """The usual change (no error text, not a cancel) as a row the writer inserts with
    its batch's others (the ``run_status_changes`` trigger, schema v8); None for the
    rest. A change its guard refuses goes the general way (:func:`set_run_status`), which
    says why. The row's result is None: the store reads the run after it."""
    if error is not None or status == "cancelled" or status not in _STATUSES:
        return None
    allowed = None if only_from is None else json.dumps(sorted(only_from))
    return Row(_STATUS_CHANGE, (run_id, status, allowed, now), (f"run {run_id}",),
               lambda: None)


async def set_run_status(tx: Txn, run_id: str, status: RunStatus,
                   error: str | None, only_from: Collection[RunStatus] | None) -> Run:
    """Change a run's status; ``cancelled`` also cancels its live tasks, fencing their workers.

    Any other change is three statements: the run's row, the change (taking its event's
    seq and returning the run) and the event."""
    if status not in _STATUSES:
        raise UserError(f"run status must be one of {sorted(_STATUSES)}, got {status!r}")
    row = (await tx.execute(_GET, (run_id,))).fetchone()
    if row is None:
        raise NotFoundError(f"run {run_id!r} does not exist")
    current = row[3]
    if only_from is not None and current not in only_from:
        raise UserError(
            f"run {run_id} is {current}; this change needs it to be one of "
            f"{sorted(only_from)}"
        )
    error_text = tx.enc.optional_text(error, f"error of run {run_id}")
    data: JSON = {"status": status, "previous": current, "error": short(error)}
    if status != "cancelled":
        row = (await tx.execute(_SET_STATUS_AND_SEQ, (status, error_text, tx.now,
                                                      run_id))).fetchone()
        await insert_event(tx, run_id, row[11], f"run.{status}", data)
        return _returned(row)
    await tx.execute(_SET_STATUS, (status, error_text, tx.now, run_id))
    await append_event(tx, run_id, f"run.{status}", data)
    # steps in flight stop now (their owner cancels them on seeing the run cancelled,
    # and can no longer write for them): they are recorded as cancelled, not left started
    cancelled = await tx.execute(_CANCEL_STEPS, (tx.now, run_id))
    for task_id, step, kind, name in cancelled.fetchall():
        await append_event(tx, run_id, "step.cancelled",
                           {"task": task_id, "step": step, "kind": kind, "name": name})
    for task_id, role in (await tx.execute(_CANCEL_TASKS, (tx.now, run_id))).fetchall():
        await append_event(tx, run_id, "task.cancelled", {"task": task_id, "role": role})
    return _rows.run((await tx.execute(_GET, (run_id,))).fetchone())
