"""Board writes on PostgreSQL: messages, compactions, plans, handoffs, notes, and
``Writes`` bundles, composed into the transaction that carries them.

Per-agent message seqs and per-run plan versions come from counters on the
owner's row (``agents.last_seq``, the run row's lock), so concurrent writers on
several hosts never pick the same number.
"""

from __future__ import annotations

from collections.abc import Sequence

from orchestra._errors import NotFoundError, UserError
from orchestra._types import (
    JSON,
    MESSAGE_ROLES,
    AgentId,
    Handoff,
    Message,
    Note,
    Plan,
)
from orchestra.store import entry_rows as _entry_rows
from orchestra.store import rows as _rows
from orchestra.store.codec import new_id
from orchestra.store.postgres import entries as _entries
from orchestra.store.postgres.events import append_event, require_run
from orchestra.store.postgres.tasks import insert_task
from orchestra.store.postgres.txn import Txn
from orchestra.store.protocol import NewHandoff, NewNote, NewTask, Writes

_TAKE_SEQS = """
INSERT INTO agents (id, run_id, role, created_at, last_seq) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (id) DO UPDATE SET last_seq = agents.last_seq + excluded.last_seq
RETURNING last_seq"""
_INSERT_MESSAGE = (
    "INSERT INTO messages (agent_id, seq, task_id, role, content, tool_calls, tool_call_id, "
    "name, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"
)
_INSERT_COMPACTION = (
    "INSERT INTO compactions (agent_id, first_seq, last_seq, summary, task_id, step, created_at) "
    "VALUES ($1, $2, $3, $4, $5, $6, $7)"
)
_LOCK_RUN = "SELECT 1 FROM runs WHERE id = $1 FOR UPDATE"
_NEXT_PLAN_VERSION = "SELECT COALESCE(MAX(version), 0) + 1 FROM plans WHERE run_id = $1"
_INSERT_PLAN = (
    "INSERT INTO plans (run_id, version, author, body, created_at) VALUES ($1, $2, $3, $4, $5)"
)
_HANDOFF_OF_TASK = f"SELECT {_rows.HANDOFF_COLS} FROM handoffs WHERE task_id = $1"
_INSERT_NOTE = (
    "INSERT INTO notes (run_id, author, tags, body, created_at, scope) "
    "VALUES ($1, $2, $3, $4, $5, $6) RETURNING id"
)


async def append_messages(tx: Txn, run_id: str, agent_id: str, task_id: str | None,
                          messages: Sequence[Message]) -> int:
    """Register the agent (on its first write) and append to its history in one counter
    update; returns the seq of the last message appended (0 when there were none)."""
    if not agent_id:
        raise UserError("agent_id must be a non-empty string")
    rows = []
    for m in messages:
        if m.role not in MESSAGE_ROLES:
            raise UserError(f"message role must be one of {sorted(MESSAGE_ROLES)}, "
                            f"got {m.role!r}")
        field = f"message of {agent_id}"
        calls = None
        if m.tool_calls:
            calls = tx.enc.json([{"id": call.id, "name": call.name, "arguments": call.arguments}
                                 for call in m.tool_calls], field + " tool_calls")
        rows.append([task_id, m.role, tx.enc.text(m.content, field + " content"), calls,
                     m.tool_call_id, m.name, tx.now])
    role = AgentId.parse(agent_id).role
    last: int = await tx.fetchval(_TAKE_SEQS, agent_id, run_id, role, tx.now, len(rows))
    if not rows:
        return 0
    first = last - len(rows) + 1
    await tx.executemany(_INSERT_MESSAGE, [(agent_id, first + i, *row)
                                           for i, row in enumerate(rows)])
    return last


async def post_plan(tx: Txn, run_id: str, author: str, body: JSON) -> Plan:
    text = tx.enc.json(body, f"plan body from {author!r}")
    if await tx.fetchval(_LOCK_RUN, run_id) is None:  # the run's lock orders plan versions
        raise NotFoundError(f"run {run_id!r} does not exist")
    version = await tx.fetchval(_NEXT_PLAN_VERSION, run_id)
    await append_event(tx, run_id, "plan.posted", {"version": version, "author": author})
    await tx.execute(_INSERT_PLAN, run_id, version, author, text, tx.now)
    return Plan(run_id, version, author, body, tx.now)


async def post_handoff(tx: Txn, run_id: str, from_agent: str, handoff: NewHandoff, *,
                       parent_id: str | None = None) -> Handoff:
    """Create the receiving task (its row is the handoff's record) and announce both."""
    handoff_id = new_id()
    note = tx.enc.text(handoff.note, f"handoff note to {handoff.to_role!r}")
    task = await insert_task(tx, run_id, NewTask(
        role=handoff.to_role, input=handoff.payload, max_attempts=handoff.max_attempts,
        key=handoff.key, cause=f"handoff:{handoff_id}"), parent_id=parent_id,
        announce=False, handoff=(from_agent, note))
    if task.cause != f"handoff:{handoff_id}":  # the key matched an existing task
        row = await tx.fetchrow(_HANDOFF_OF_TASK, task.id)
        if row is None:
            raise UserError(f"handoff key {handoff.key!r} names task {task.id}, which was not "
                            "created by a handoff; use a different key")
        return _rows.handoff(tuple(row))
    await append_event(tx, run_id, "handoff.posted",
                       {"handoff": handoff_id, "from": from_agent, "to_role": handoff.to_role,
                        "task": task.id})
    return Handoff(handoff_id, run_id, from_agent, handoff.to_role, handoff.payload,
                   handoff.note, task.id, tx.now)


async def post_note(tx: Txn, run_id: str, author: str, note: NewNote) -> Note:
    await require_run(tx, run_id)
    body = tx.enc.text(note.body, f"note body from {author!r}")
    tags_text, scope = _entry_rows.note_columns(tx.enc, author, note)
    note_id = int(await tx.fetchval(_INSERT_NOTE, run_id, author, tags_text, body, tx.now,
                                    scope))
    await append_event(tx, run_id, "note.posted", _entry_rows.note_posted(note_id, author, note))
    return Note(note_id, run_id, author, body, tuple(note.tags), tx.now, scope=note.scope)


async def apply_writes(tx: Txn, run_id: str, agent_id: str | None, task_id: str | None,
                       writes: Writes | None) -> int:
    """Apply a ``Writes`` bundle authored by ``agent_id`` while working on ``task_id``."""
    if not writes:
        return 0
    if agent_id is None:
        raise UserError("writes need the agent_id that authored them")
    last_seq = await append_messages(tx, run_id, agent_id, task_id, writes.messages)
    for record in writes.compactions:
        if record.first_seq > record.last_seq:
            raise UserError(f"compaction of {agent_id}: first_seq {record.first_seq} > "
                            f"last_seq {record.last_seq}")
        summary = tx.enc.text(record.summary, f"compaction summary of {agent_id}")
        await tx.execute(_INSERT_COMPACTION, agent_id, record.first_seq, record.last_seq, summary,
                         record.task_id if record.task_id is not None else task_id, record.step,
                         tx.now)
    for body in writes.plans:
        await post_plan(tx, run_id, agent_id, body)
    for handoff in writes.handoffs:
        await post_handoff(tx, run_id, agent_id, handoff, parent_id=task_id)
    for new_note in writes.notes:
        await post_note(tx, run_id, agent_id, new_note)
    cause = None if task_id is None else f"task:{task_id}"
    for new_task in writes.tasks:
        await insert_task(tx, run_id, new_task, parent_id=task_id, cause=cause)
    for kind, data in writes.events:
        await append_event(tx, run_id, kind, data)
    await _entries.post_entries(tx, run_id, agent_id, task_id, writes.entries)
    await _entries.post_triggers(tx, run_id, task_id, writes.triggers)
    return last_seq
