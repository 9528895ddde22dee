"""Reads of the PostgreSQL board (plans, handoffs, notes), agents' histories and agent
totals: the same reads as SQLite's ``sqlite/board_reads.py``."""

from __future__ import annotations

from typing import Any

import asyncpg

from orchestra._types import AgentInfo, CompactionRecord, Handoff, Message, Note, Plan
from orchestra.store import rows as _rows
from orchestra.store.postgres.reads import require_run
from orchestra.store.rules import fts_query

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
            notes = [_rows.note(r[:7], r[7]) for r in rows]
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
