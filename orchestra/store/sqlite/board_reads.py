"""Reads of the board (plans, handoffs, notes), agents' histories and agent totals."""

from __future__ import annotations

import json
from typing import Any

from orchestra._types import AgentInfo, CompactionRecord, Handoff, Message, Note, Plan
from orchestra.store import rows as _rows
from orchestra.store.rules import fts_query
from orchestra.store.sqlite.reads import require_run
from orchestra.store.sqlite.txn import Conn

_MESSAGES = (
    f"SELECT {_rows.MESSAGE_COLS} FROM messages WHERE agent_id = ? AND seq > ? "
    "ORDER BY seq LIMIT ?"
)
# Messages have no full-text index (see schema): this scans one agent's history.
_SEARCH_MESSAGES = f"""
SELECT {_rows.MESSAGE_COLS} FROM (
    SELECT m.*, (SELECT COUNT(*) FROM json_each(?2) w
                 WHERE m.content LIKE '%' || w.value || '%' ESCAPE '\\') AS hits
    FROM messages m WHERE m.agent_id = ?1)
WHERE hits > 0 ORDER BY hits DESC, seq DESC LIMIT ?3"""
_COMPACTIONS = f"SELECT {_rows.COMPACTION_COLS} FROM compactions WHERE agent_id = ? ORDER BY id"
_PLANS = f"SELECT {_rows.PLAN_COLS} FROM plans WHERE run_id = ? ORDER BY version"
_LATEST_PLAN = f"SELECT {_rows.PLAN_COLS} FROM plans WHERE run_id = ? ORDER BY version DESC LIMIT 1"
_HANDOFFS = f"""
SELECT {_rows.HANDOFF_COLS} FROM handoffs
WHERE run_id = ?1 AND (?2 IS NULL OR to_role = ?2) AND (?3 IS NULL OR from_agent = ?3)
ORDER BY created_at, position"""
_NOTE_FILTERS = """(?2 IS NULL OR n.run_id = ?2) AND (?3 IS NULL OR n.author = ?3)
  AND (?4 IS NULL OR EXISTS (SELECT 1 FROM json_each(n.tags) WHERE value = ?4))"""
_SEARCH_NOTES = f"""
SELECT {_rows.NOTE_COLS_N}, -bm25(notes_fts) AS rank
FROM notes_fts JOIN notes n ON n.id = notes_fts.rowid
WHERE notes_fts MATCH ?1 AND {_NOTE_FILTERS}
ORDER BY rank DESC LIMIT ?5"""
_LIST_NOTES = f"""
SELECT {_rows.NOTE_COLS_N} FROM notes n WHERE {_NOTE_FILTERS}
ORDER BY n.id DESC LIMIT ?5"""
_AGENTS = """
SELECT a.id, a.role, (SELECT COUNT(*) FROM messages m WHERE m.agent_id = a.id)
FROM agents a WHERE a.run_id = ? ORDER BY a.created_at, a.id"""
_STEP_TOTALS = """
SELECT t.role, SUM(s.status = 'completed'), SUM(s.attempts - 1), SUM(s.tokens_in),
       SUM(s.tokens_out), SUM(s.cost)
FROM steps s JOIN tasks t ON t.id = s.task_id WHERE t.run_id = ? GROUP BY t.role"""
# SQLite takes the bare columns of a MAX() aggregate from the row holding the maximum.
_RESTART_POINTS = """
SELECT t.role, s.task_id, s.retry, s.step, MAX(s.finished_at)
FROM steps s JOIN tasks t ON t.id = s.task_id
WHERE t.run_id = ? AND s.status = 'completed' GROUP BY t.role"""


async def get_messages(conn: Conn, agent_id: str, after_seq: int,
                 limit: int | None) -> list[Message]:
    rows = (await conn.execute(_MESSAGES, (agent_id, after_seq, -1 if limit is None else limit)))
    return [_rows.message(r) for r in rows.fetchall()]


async def search_messages(conn: Conn, agent_id: str, text: str,
                    limit: int) -> list[Message]:
    """Messages containing any of the words (case-insensitive), most words first, then newest."""
    words = sorted({_like_escape(w.lower()) for w in text.split()})
    if not words:
        return []
    rows = (await conn.execute(_SEARCH_MESSAGES, (agent_id, json.dumps(words), limit))).fetchall()
    return [_rows.message(r) for r in rows]


async def get_compactions(conn: Conn, agent_id: str) -> list[CompactionRecord]:
    return [_rows.compaction(r) for r in (await conn.execute(_COMPACTIONS, (agent_id,))).fetchall()]


async def get_plans(conn: Conn, run_id: str) -> list[Plan]:
    rows = (await conn.execute(_PLANS, (run_id,))).fetchall()
    if not rows:
        await require_run(conn, run_id)
    return [_rows.plan(r) for r in rows]


async def latest_plan(conn: Conn, run_id: str) -> Plan | None:
    row = (await conn.execute(_LATEST_PLAN, (run_id,))).fetchone()
    if row is None:
        await require_run(conn, run_id)
        return None
    return _rows.plan(row)


async def get_handoffs(conn: Conn, run_id: str, to_role: str | None,
                 from_agent: str | None) -> list[Handoff]:
    rows = (await conn.execute(_HANDOFFS, (run_id, to_role, from_agent))).fetchall()
    if not rows:
        await require_run(conn, run_id)
    return [_rows.handoff(r) for r in rows]


async def search_notes(conn: Conn, run_id: str | None, text: str | None,
                 author: str | None, tag: str | None, limit: int) -> list[Note]:
    """With ``text``: most relevant first (``rank`` = -bm25: higher is better). Without:
    newest first."""
    rows: list[Any]
    if text is not None:
        query = fts_query(text)
        if query is None:
            rows = []
        else:
            found = await conn.execute(_SEARCH_NOTES, (query, run_id, author, tag, limit))
            rows = found.fetchall()
        notes = [_rows.note(r[:7], r[7]) for r in rows]
    else:
        rows = (await conn.execute(_LIST_NOTES, (None, run_id, author, tag, limit))).fetchall()
        notes = [_rows.note(r) for r in rows]
    if not notes and run_id is not None:
        await require_run(conn, run_id)
    return notes


async def agent_infos(conn: Conn, run_id: str) -> list[AgentInfo]:
    """Per agent of the run: history size, journal totals of its role, restart point."""
    (await conn.execute("BEGIN"))  # one snapshot for the three queries
    try:
        await require_run(conn, run_id)
        agents = (await conn.execute(_AGENTS, (run_id,))).fetchall()
        totals = {r[0]: r[1:] for r in (await conn.execute(_STEP_TOTALS, (run_id,))).fetchall()}
        points = {r[0]: r[1:4] for r in (await conn.execute(_RESTART_POINTS, (run_id,))).fetchall()}
    finally:
        await conn.execute("COMMIT")
    infos = []
    for agent_id, role, messages in agents:
        completed, reissued, tokens_in, tokens_out, cost = totals.get(role, (0, 0, 0, 0, 0.0))
        point = points.get(role)
        infos.append(AgentInfo(
            agent_id, role, messages, completed or 0, reissued or 0, tokens_in or 0,
            tokens_out or 0,
            None if point is None else {"task": point[0], "retry": point[1], "step": point[2]},
            float(cost or 0.0)))
    return infos


def _like_escape(word: str) -> str:
    return word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
