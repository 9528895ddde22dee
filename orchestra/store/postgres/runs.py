"""Runs on PostgreSQL: create, change status (cancelling fences every live task)."""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from typing import Any

import asyncpg

from orchestra._errors import NotFoundError, UserError
from orchestra._types import JSON, RUN_STATUSES, Run, RunStatus, Task
from orchestra.store import rows as _rows
from orchestra.store.codec import Encoder, new_id, short
from orchestra.store.postgres.events import append_event, require_run, whole
from orchestra.store.postgres.tasks import insert_tasks
from orchestra.store.postgres.txn import Txn
from orchestra.store.protocol import NewTask
from orchestra.store.rules import check_new_task

_INSERT = (
    "INSERT INTO runs (id, pipeline, input, status, created_at, updated_at, version) "
    "VALUES ($1, $2, $3, 'pending', $4, $4, $5) ON CONFLICT (id) DO NOTHING"
)
_LOCK = "SELECT status FROM runs WHERE id = $1 FOR UPDATE"
_GET = f"SELECT {_rows.RUN_COLS} FROM runs WHERE id = $1"
_SET_STATUS = "UPDATE runs SET status = $1, error = $2, updated_at = $3 WHERE id = $4"
_CREATE_AT_ONCE = (f"SELECT {_rows.RUN_COLS} FROM orchestra_create_run("
                   f"{', '.join(f'${i}' for i in range(1, 14))})")
_SET_AT_ONCE = f"SELECT {_rows.RUN_COLS} FROM orchestra_set_run_status($1, $2, $3, $4, $5, $6)"
_PREVIOUS = "\x01previous\x01"
"""Stands for the previous status in the event's data Python encodes (the function,
which alone knows it, puts it in)."""
_CANCEL_TASKS = (
    "UPDATE tasks SET status = 'cancelled', lease_owner = NULL, lease_expires_at = NULL, "
    "updated_at = $1 WHERE run_id = $2 AND status IN ('pending', 'running', 'waiting') "
    "RETURNING id, role, position"
)
_STATUSES = frozenset(RUN_STATUSES)


async def create_run(tx: Txn, pipeline: str, input: JSON, run_id: str | None,
                     tasks: Sequence[NewTask], settings: JSON = None, version: str = "",
                     manifest: JSON = None) -> Run:
    run_id, text, created = _new_run(tx.enc, pipeline, input, run_id, settings, version,
                                     manifest)
    if await tx.execute(_INSERT, run_id, pipeline, text, tx.now, version) != "INSERT 0 1":
        raise _exists(run_id)
    await append_event(tx, run_id, "run.created", created)
    await insert_tasks(tx, run_id, tasks, cause="run")
    return _rows.run(whole(await tx.fetchrow(_GET, run_id)))


async def create_run_at_once(c: asyncpg.Connection, enc: Encoder, pipeline: str, input: JSON,
                             run_id: str | None, tasks: Sequence[NewTask],
                             settings: JSON = None, version: str = "",
                             manifest: JSON = None) -> Run:
    """``create_run`` as ONE statement (schema v6's ``orchestra_create_run``) when no task
    has a key (a key is looked up first: the general path); the same rows and events."""
    if any(t.key is not None for t in tasks):
        raise ValueError("tasks with keys take the general path: use create_run")
    run_id, text, created = _new_run(enc, pipeline, input, run_id, settings, version,
                                     manifest)
    event = enc.json(created, "event 'run.created' data")
    cols: list[list[Any]] = [[] for _ in range(8)]
    for new in tasks:
        check_new_task(new.role, new.max_attempts)
        task_id, why = new_id(), new.cause if new.cause is not None else "run"
        values = (task_id, new.role, enc.json(new.input, f"task input for {new.role!r}"),
                  new.max_attempts, float(new.not_before), new.parent_id, why,
                  enc.json({"task": task_id, "role": new.role, "cause": why},
                           "event 'task.created' data"))
        for column, value in zip(cols, values, strict=True):
            column.append(value)
    try:
        row = await c.fetchrow(_CREATE_AT_ONCE, run_id, pipeline, text, event, *cols, version)
    except asyncpg.PostgresError as exc:
        if getattr(exc, "sqlstate", None) == "OR005":
            raise _exists(run_id) from None
        raise
    return _rows.run(whole(row))


def _new_run(enc: Encoder, pipeline: str, input: JSON, run_id: str | None,
             settings: JSON, version: str, manifest: JSON) -> tuple[str, str, dict[str, JSON]]:
    """A new run's id, its encoded input and its ``run.created`` event data."""
    run_id = new_id(12) if run_id is None else run_id
    if not run_id:
        raise UserError("run_id must be a non-empty string")
    text = enc.json(input, f"input of run {run_id}")
    created: dict[str, JSON] = {"pipeline": pipeline}
    if settings is not None:
        created["settings"] = settings  # the caller's choices, apart from the input
    if version:  # the code it runs on (``versions``)
        created["version"] = manifest if manifest is not None else {"id": version}
    return run_id, text, created


def _exists(run_id: str) -> UserError:
    return UserError(f"run {run_id!r} already exists; choose another run_id or resume it")


async def add_tasks(tx: Txn, run_id: str, tasks: Sequence[NewTask]) -> list[Task]:
    await require_run(tx, run_id)
    return await insert_tasks(tx, run_id, tasks)


async def set_run_status(tx: Txn, run_id: str, status: RunStatus, error: str | None,
                         only_from: Collection[RunStatus] | None) -> Run:
    """Change a run's status; ``cancelled`` also cancels its live tasks, fencing their workers."""
    _check_status(status)
    current = await tx.fetchval(_LOCK, run_id)
    if current is None:
        raise NotFoundError(f"run {run_id!r} does not exist")
    if only_from is not None and current not in only_from:
        raise _not_from(run_id, current, only_from)
    error_text = tx.enc.optional_text(error, f"error of run {run_id}")
    await tx.execute(_SET_STATUS, status, error_text, tx.now, run_id)
    await append_event(tx, run_id, f"run.{status}",
                       {"status": status, "previous": current, "error": short(error)})
    if status == "cancelled":
        rows = sorted(await tx.fetch(_CANCEL_TASKS, tx.now, run_id), key=lambda r: r[2])
        for task_id, role, _ in rows:
            await append_event(tx, run_id, "task.cancelled", {"task": task_id, "role": role})
    return _rows.run(whole(await tx.fetchrow(_GET, run_id)))


async def set_run_status_at_once(c: asyncpg.Connection, enc: Encoder, run_id: str,
                                 status: RunStatus, error: str | None,
                                 only_from: Collection[RunStatus] | None) -> Run:
    """``set_run_status`` to any status but ``cancelled`` as ONE statement (schema v6's
    ``orchestra_set_run_status``): the same checks, row, event and errors."""
    _check_status(status)
    if status == "cancelled":
        raise ValueError("cancelling also cancels the run's tasks: use set_run_status")
    error_text = enc.optional_text(error, f"error of run {run_id}")
    data = enc.json({"status": status, "previous": _PREVIOUS, "error": short(error)},
                    f"event 'run.{status}' data")
    head, tail = data.split(json.dumps(_PREVIOUS), 1)
    allowed = None if only_from is None else sorted(only_from)
    try:
        row = await c.fetchrow(_SET_AT_ONCE, run_id, status, error_text, allowed, head, tail)
    except asyncpg.PostgresError as exc:
        code = getattr(exc, "sqlstate", None)
        if code == "OR002":
            raise NotFoundError(f"run {run_id!r} does not exist") from None
        if code == "OR004" and only_from is not None:
            raise _not_from(run_id, getattr(exc, "detail", "") or "?", only_from) from None
        raise
    return _rows.run(whole(row))


def _check_status(status: str) -> None:
    if status not in _STATUSES:
        raise UserError(f"run status must be one of {sorted(_STATUSES)}, got {status!r}")


def _not_from(run_id: str, current: str, only_from: Collection[RunStatus]) -> UserError:
    return UserError(
        f"run {run_id} is {current}; this change needs it to be one of {sorted(only_from)}")
