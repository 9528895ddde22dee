"""Reads of runs, tasks, the step journal, approvals and events on PostgreSQL (the board's
reads are in ``board_reads``). An empty result for a run or task that does not exist
raises ``NotFoundError`` instead of looking like "nothing yet"."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import asyncpg

from orchestra._errors import NotFoundError
from orchestra._types import Approval, Event, Run, RunStatus, Step, Task
from orchestra.store import rows as _rows
from orchestra.store.postgres.tasks import TASK_COLS

_RUN = f"SELECT {_rows.RUN_COLS} FROM runs WHERE id = $1"
_RUNS = f"""
SELECT {_rows.RUN_COLS} FROM runs
WHERE (NOT $1::boolean OR status IN ('pending', 'running', 'waiting'))
  AND ($2::text IS NULL OR status = $2) AND ($3::text IS NULL OR pipeline = $3)
  AND ($4::float8 IS NULL OR (created_at, id) < ($4, $5::text))
ORDER BY created_at DESC, id DESC LIMIT $6"""
_RUN_EXISTS = "SELECT 1 FROM runs WHERE id = $1"
_TASK = f"SELECT {TASK_COLS} FROM tasks WHERE id = $1"
_TASK_EXISTS = "SELECT 1 FROM tasks WHERE id = $1"
_TASKS = f"""
SELECT {TASK_COLS} FROM tasks
WHERE run_id = $1 AND ($2::text IS NULL OR status = $2) AND ($3::text IS NULL OR role = $3)
ORDER BY created_at, position"""
_TASK_COUNTS = "SELECT status, COUNT(*) FROM tasks WHERE run_id = $1 GROUP BY status"
_STEPS = f"SELECT {_rows.STEP_COLS} FROM steps WHERE task_id = $1 AND retry = $2 ORDER BY step"
_STEP_COUNTS = """
SELECT COUNT(*) FILTER (WHERE s.status = 'completed'), COUNT(*) FILTER (WHERE s.status = 'failed'),
       COUNT(*) FILTER (WHERE s.status = 'started'), COUNT(*) FILTER (WHERE s.status = 'cancelled'),
       COALESCE(SUM(s.attempts - 1), 0),
       COUNT(*) FILTER (WHERE s.retry > 0 AND EXISTS (
           SELECT 1 FROM steps p WHERE p.task_id = s.task_id AND p.retry < s.retry
           AND p.step = s.step))
FROM steps s JOIN tasks t ON t.id = s.task_id WHERE t.run_id = $1"""
# A claimed task whose retry has no first step yet has it in flight: its claim journals it.
_FIRST_STEPS_IN_FLIGHT = """
SELECT COUNT(*) FROM tasks t WHERE t.run_id = $1 AND t.status = 'running' AND NOT EXISTS (
    SELECT 1 FROM steps s WHERE s.task_id = t.id AND s.retry = t.retries AND s.step = 1)"""
_APPROVAL_BY_STEP = (
    f"SELECT {_rows.APPROVAL_COLS} FROM approvals WHERE task_id = $1 AND retry = $2 AND step = $3"
)
_APPROVAL = f"SELECT {_rows.APPROVAL_COLS} FROM approvals WHERE id = $1"
_APPROVALS = f"""
SELECT {_rows.APPROVAL_COLS} FROM approvals
WHERE run_id = $1 AND ($2::text IS NULL OR status = $2) ORDER BY created_at, position"""
_EVENTS = (
    f"SELECT {_rows.EVENT_COLS} FROM events WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT $3"
)
_EVENTS_OF_KINDS = (
    f"SELECT {_rows.EVENT_COLS} FROM events WHERE run_id = $1 AND seq > $2 "
    "AND kind = ANY($4::text[]) ORDER BY seq LIMIT $3"
)


def _t(rows: list[asyncpg.Record]) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in rows]


async def require_run(c: asyncpg.Connection, run_id: str) -> None:
    if await c.fetchval(_RUN_EXISTS, run_id) is None:
        raise NotFoundError(f"run {run_id!r} does not exist")


_RUN_STATUSES = "SELECT id, status FROM runs WHERE id = ANY($1::text[])"


async def run_statuses(c: asyncpg.Connection, run_ids: Sequence[str]) -> dict[str, RunStatus]:
    return {r[0]: r[1] for r in await c.fetch(_RUN_STATUSES, list(run_ids))}


async def get_run(c: asyncpg.Connection, run_id: str) -> Run:
    row = await c.fetchrow(_RUN, run_id)
    if row is None:
        raise NotFoundError(f"run {run_id!r} does not exist")
    return _rows.run(tuple(row))


async def list_runs(c: asyncpg.Connection, active_only: bool, limit: int, status: str | None,
                    pipeline: str | None, before: tuple[float, str] | None) -> list[Run]:
    at, run_id = before if before is not None else (None, None)
    rows = await c.fetch(_RUNS, active_only, status, pipeline, at, run_id, limit)
    return [_rows.run(r) for r in _t(rows)]


async def get_task(c: asyncpg.Connection, task_id: str) -> Task:
    row = await c.fetchrow(_TASK, task_id)
    if row is None:
        raise NotFoundError(f"task {task_id!r} does not exist")
    return _rows.task(tuple(row))


async def list_tasks(c: asyncpg.Connection, run_id: str, status: str | None,
                     role: str | None) -> list[Task]:
    rows = _t(await c.fetch(_TASKS, run_id, status, role))
    if not rows:
        await require_run(c, run_id)
    return _rows.many_tasks(rows)


async def task_counts(c: asyncpg.Connection, run_id: str) -> dict[str, int]:
    counts = {status: n for status, n in await c.fetch(_TASK_COUNTS, run_id)}
    if not counts:
        await require_run(c, run_id)
    return counts


async def get_steps(c: asyncpg.Connection, task_id: str, retry: int) -> list[Step]:
    rows = _t(await c.fetch(_STEPS, task_id, retry))
    if not rows and await c.fetchval(_TASK_EXISTS, task_id) is None:
        raise NotFoundError(f"task {task_id!r} does not exist")
    return [_rows.step(r) for r in rows]


async def step_counts(c: asyncpg.Connection, run_id: str) -> dict[str, int]:
    await require_run(c, run_id)
    row = await c.fetchrow(_STEP_COUNTS, run_id)
    completed, failed, started, cancelled, reissued, retried = (
        tuple(row) if row is not None else (0,) * 6)
    started += await c.fetchval(_FIRST_STEPS_IN_FLIGHT, run_id)
    return {"completed": completed, "failed": failed, "started": started,
            "cancelled": cancelled, "reissued": int(reissued), "retried": retried}


async def find_approval(c: asyncpg.Connection, task_id: str, retry: int,
                        step: int) -> Approval | None:
    row = await c.fetchrow(_APPROVAL_BY_STEP, task_id, retry, step)
    return None if row is None else _rows.approval(tuple(row))


async def get_approval(c: asyncpg.Connection, approval_id: str) -> Approval:
    row = await c.fetchrow(_APPROVAL, approval_id)
    if row is None:
        raise NotFoundError(f"approval {approval_id!r} does not exist")
    return _rows.approval(tuple(row))


async def list_approvals(c: asyncpg.Connection, run_id: str,
                         status: str | None) -> list[Approval]:
    rows = _t(await c.fetch(_APPROVALS, run_id, status))
    if not rows:
        await require_run(c, run_id)
    return [_rows.approval(r) for r in rows]


async def events(c: asyncpg.Connection, run_id: str, starting_after: int,
                 limit: int, kinds: Sequence[str] | None) -> list[Event]:
    rows = _t(await c.fetch(_EVENTS, run_id, starting_after, limit) if kinds is None
              else await c.fetch(_EVENTS_OF_KINDS, run_id, starting_after, limit, list(kinds)))
    if not rows:
        await require_run(c, run_id)
    return [_rows.event(r) for r in rows]
