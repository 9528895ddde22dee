"""Reads of the PostgreSQL blackboard. An empty result for a run or task that does not
exist raises ``NotFoundError`` instead of looking like "nothing yet"."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import asyncpg

from orchestra._errors import NotFoundError
from orchestra._types import (
    AgentInfo,
    Approval,
    CompactionRecord,
    Event,
    Handoff,
    Message,
    Note,
    Plan,
    Run,
    RunStatus,
    Step,
    Task,
)
from orchestra.store import rows as _rows
from orchestra.store.postgres.tasks import TASK_COLS
from orchestra.store.rules import fts_query

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
_MESSAGES = (
    f"SELECT {_rows.MESSAGE_COLS} FROM messages WHERE agent_id = $1 AND seq > $2 "
    "ORDER BY seq LIMIT $3"
)
# no text index on messages (as in SQLite): a scan of one agent's history
_SEARCH_MESSAGES = f"""
SELECT {_rows.MESSAGE_COLS} FROM (
    SELECT m.*, (SELECT COUNT(*) FROM unnest($2::text[]) AS w(word)
                 WHERE m.content ILIKE '%' || w.word || '%') AS hits
    FROM messages m WHERE m.agent_id = $1) AS scored
WHERE hits > 0 ORDER BY hits DESC, seq DESC LIMIT $3"""
_COMPACTIONS = f"SELECT {_rows.COMPACTION_COLS} FROM compactions WHERE agent_id = $1 ORDER BY id"
_PLANS = f"SELECT {_rows.PLAN_COLS} FROM plans WHERE run_id = $1 ORDER BY version"
_LATEST_PLAN = (
    f"SELECT {_rows.PLAN_COLS} FROM plans WHERE run_id = $1 ORDER BY version DESC LIMIT 1"
)
_HANDOFFS = f"""
SELECT {_rows.HANDOFF_COLS} FROM handoffs
WHERE run_id = $1 AND ($2::text IS NULL OR to_role = $2) AND ($3::text IS NULL OR from_agent = $3)
ORDER BY created_at, position"""
_NOTE_FILTERS = """($1::text IS NULL OR n.run_id = $1) AND ($2::text IS NULL OR n.author = $2)
  AND ($3::text IS NULL OR n.tags::jsonb ? $3)"""
# ts_rank: higher is more relevant (the protocol's Note.rank); every word must match
_SEARCH_NOTES = f"""
SELECT {_rows.NOTE_COLS_N}, ts_rank(n.words, q)::float8 AS rank
FROM notes n, plainto_tsquery('simple', $5) AS q
WHERE n.words @@ q AND {_NOTE_FILTERS}
ORDER BY rank DESC, n.id DESC LIMIT $4"""
_LIST_NOTES = f"""
SELECT {_rows.NOTE_COLS_N} FROM notes n WHERE {_NOTE_FILTERS} ORDER BY n.id DESC LIMIT $4"""
_AGENTS = """
SELECT a.id, a.role, a.last_seq FROM agents a WHERE a.run_id = $1 ORDER BY a.created_at, a.id"""
_STEP_TOTALS = """
SELECT t.role, COUNT(*) FILTER (WHERE s.status = 'completed'),
       COUNT(*) FILTER (WHERE s.attempts > 1), SUM(s.tokens_in), SUM(s.tokens_out),
       SUM(s.cost)
FROM steps s JOIN tasks t ON t.id = s.task_id WHERE t.run_id = $1 GROUP BY t.role"""
_RESTART_POINTS = """
SELECT DISTINCT ON (t.role) t.role, s.task_id, s.retry, s.step
FROM steps s JOIN tasks t ON t.id = s.task_id
WHERE t.run_id = $1 AND s.status = 'completed' ORDER BY t.role, s.finished_at DESC"""


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


async def get_messages(c: asyncpg.Connection, agent_id: str, after_seq: int,
                       limit: int | None) -> list[Message]:
    return [_rows.message(r) for r in _t(await c.fetch(_MESSAGES, agent_id, after_seq, limit))]


async def search_messages(c: asyncpg.Connection, agent_id: str, text: str,
                          limit: int) -> list[Message]:
    words = sorted({_like_escape(w.lower()) for w in text.split()})
    if not words:
        return []
    return [_rows.message(r)
            for r in _t(await c.fetch(_SEARCH_MESSAGES, agent_id, words, limit))]


async def get_compactions(c: asyncpg.Connection, agent_id: str) -> list[CompactionRecord]:
    return [_rows.compaction(r) for r in _t(await c.fetch(_COMPACTIONS, agent_id))]


async def get_plans(c: asyncpg.Connection, run_id: str) -> list[Plan]:
    rows = _t(await c.fetch(_PLANS, run_id))
    if not rows:
        await require_run(c, run_id)
    return [_rows.plan(r) for r in rows]


async def latest_plan(c: asyncpg.Connection, run_id: str) -> Plan | None:
    row = await c.fetchrow(_LATEST_PLAN, run_id)
    if row is None:
        await require_run(c, run_id)
        return None
    return _rows.plan(tuple(row))


async def get_handoffs(c: asyncpg.Connection, run_id: str, to_role: str | None,
                       from_agent: str | None) -> list[Handoff]:
    rows = _t(await c.fetch(_HANDOFFS, run_id, to_role, from_agent))
    if not rows:
        await require_run(c, run_id)
    return [_rows.handoff(r) for r in rows]


async def search_notes(c: asyncpg.Connection, run_id: str | None, text: str | None,
                       author: str | None, tag: str | None, limit: int) -> list[Note]:
    """With ``text``: notes holding every word, most relevant first; without: newest first."""
    if text is not None:
        if fts_query(text) is None:  # no word with a letter or digit: nothing can match
            notes = []
        else:
            rows = _t(await c.fetch(_SEARCH_NOTES, run_id, author, tag, limit, text))
            notes = [_rows.note(r[:6], r[6]) for r in rows]
    else:
        notes = [_rows.note(r)
                 for r in _t(await c.fetch(_LIST_NOTES, run_id, author, tag, limit))]
    if not notes and run_id is not None:
        await require_run(c, run_id)
    return notes


async def agent_infos(c: asyncpg.Connection, run_id: str) -> list[AgentInfo]:
    """Per agent of the run: history size, journal totals of its role, restart point."""
    async with c.transaction(isolation="repeatable_read", readonly=True):  # one snapshot
        await require_run(c, run_id)
        agents = await c.fetch(_AGENTS, run_id)
        totals = {r[0]: tuple(r)[1:] for r in await c.fetch(_STEP_TOTALS, run_id)}
        points = {r[0]: tuple(r)[1:4] for r in await c.fetch(_RESTART_POINTS, run_id)}
    infos = []
    for agent_id, role, messages in agents:
        completed, reissued, tokens_in, tokens_out, cost = totals.get(role, (0, 0, 0, 0, 0.0))
        point = points.get(role)
        infos.append(AgentInfo(
            agent_id, role, messages, completed or 0, reissued or 0, int(tokens_in or 0),
            int(tokens_out or 0),
            None if point is None else {"task": point[0], "retry": point[1], "step": point[2]},
            float(cost or 0.0)))
    return infos


def _like_escape(word: str) -> str:
    return word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
