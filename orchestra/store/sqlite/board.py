"""Board writes: messages, compactions, plans, handoffs, notes, and ``Writes`` bundles.

These compose into the transaction of whatever carries them (a step, a task's
end, or a direct ``post_*`` call), so a handoff and the task it creates, or a step
and the messages it produced, commit together or not at all.
"""

from __future__ import annotations

from collections.abc import Sequence

from orchestra._errors import UserError
from orchestra._types import (
    JSON,
    AgentId,
    CompactionRecord,
    Handoff,
    Message,
    Note,
    Plan,
)
from orchestra.store import entry_rows as _entry_rows
from orchestra.store import rows as _rows
from orchestra.store.codec import encode_message, new_id
from orchestra.store.protocol import NewHandoff, NewNote, NewTask, Writes
from orchestra.store.sqlite import entries as _entries
from orchestra.store.sqlite.events import append_event, require_run
from orchestra.store.sqlite.tasks import insert_task
from orchestra.store.sqlite.txn import Txn

_INSERT_AGENT = "INSERT OR IGNORE INTO agents (id, run_id, role, created_at) VALUES (?, ?, ?, ?)"
_LAST_MESSAGE_SEQ = "SELECT COALESCE(MAX(seq), 0) FROM messages WHERE agent_id = ?"
_INSERT_MESSAGE = (
    "INSERT INTO messages (agent_id, seq, task_id, role, content, tool_calls, tool_call_id, "
    "name, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_INSERT_COMPACTION = (
    "INSERT INTO compactions (agent_id, first_seq, last_seq, summary, task_id, step, created_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id"
)
_NEXT_PLAN_VERSION = "SELECT COALESCE(MAX(version), 0) + 1 FROM plans WHERE run_id = ?"
_INSERT_PLAN = (
    "INSERT INTO plans (run_id, version, author, body, created_at) VALUES (?, ?, ?, ?, ?)"
)
_HANDOFF_OF_TASK = f"SELECT {_rows.HANDOFF_COLS} FROM handoffs WHERE task_id = ?"
_INSERT_NOTE = (
    "INSERT INTO notes (run_id, author, tags, body, created_at, scope) VALUES (?, ?, ?, ?, ?, ?) "
    "RETURNING id"
)


async def register_agent(tx: Txn, run_id: str, agent_id: str) -> None:
    """Create the agent's row on its first write (agents are implicit in the API)."""
    if not agent_id:
        raise UserError("agent_id must be a non-empty string")
    await tx.execute(_INSERT_AGENT, (agent_id, run_id, AgentId.parse(agent_id).role, tx.now))


async def append_messages(tx: Txn, agent_id: str, task_id: str | None,
                    messages: Sequence[Message]) -> int:
    """Append to the agent's history; the store assigns ``seq`` (max + 1) and ``task_id``.

    Returns the seq of the last message appended (0 when there were none).
    """
    if not messages:
        return 0
    seq = await last_message_seq(tx, agent_id)
    rows = []
    for m in messages:
        seq += 1
        content, calls = encode_message(tx.enc, m, f"message {seq} of {agent_id}")
        rows.append((agent_id, seq, task_id, m.role, content, calls, m.tool_call_id, m.name,
                     tx.now))
    await tx.executemany(_INSERT_MESSAGE, rows)
    return seq


async def last_message_seq(tx: Txn, agent_id: str) -> int:
    """The seq of the agent's last stored message (0 for none)."""
    return int((await tx.execute(_LAST_MESSAGE_SEQ, (agent_id,))).fetchone()[0])


async def record_compaction(tx: Txn, agent_id: str,
                      task_id: str | None, record: CompactionRecord) -> int:
    if record.first_seq > record.last_seq:
        raise UserError(f"compaction of {agent_id}: first_seq {record.first_seq} > "
                        f"last_seq {record.last_seq}")
    summary = tx.enc.text(record.summary, f"compaction summary of {agent_id}")
    row = (await tx.execute(_INSERT_COMPACTION, (
        agent_id, record.first_seq, record.last_seq, summary,
        record.task_id if record.task_id is not None else task_id, record.step, tx.now))).fetchone()
    return int(row[0])


async def post_plan(tx: Txn, run_id: str, author: str, body: JSON) -> Plan:
    """A new plan version supersedes the previous ones."""
    text = tx.enc.json(body, f"plan body from {author!r}")
    version = (await tx.execute(_NEXT_PLAN_VERSION, (run_id,))).fetchone()[0]
    await append_event(tx, run_id, "plan.posted", {"version": version, "author": author})
    await tx.execute(_INSERT_PLAN, (run_id, version, author, text, tx.now))
    return Plan(run_id, version, author, body, tx.now)


async def post_handoff(tx: Txn, run_id: str, from_agent: str,
                 handoff: NewHandoff, *, parent_id: str | None = None) -> Handoff:
    """Record a handoff and create its receiving task in the same transaction.

    With a ``key`` that already names a task of the run, nothing is written and the
    handoff that created that task is returned.
    """
    handoff_id = new_id()
    note = tx.enc.text(handoff.note, f"handoff note to {handoff.to_role!r}")
    # the task's row is the handoff's record (the ``handoffs`` view reads it back)
    task = await insert_task(tx, run_id, NewTask(
        role=handoff.to_role, input=handoff.payload, max_attempts=handoff.max_attempts,
        key=handoff.key, cause=f"handoff:{handoff_id}"), parent_id=parent_id,
        announce=False, handoff=(from_agent, note))
    if task.cause != f"handoff:{handoff_id}":  # the key matched an existing task
        row = (await tx.execute(_HANDOFF_OF_TASK, (task.id,))).fetchone()
        if row is None:
            raise UserError(f"handoff key {handoff.key!r} names task {task.id}, which was not "
                            "created by a handoff; use a different key")
        return _rows.handoff(row)
    # also announces the task it created (there is no separate task.created)
    await append_event(tx, run_id, "handoff.posted",
                 {"handoff": handoff_id, "from": from_agent, "to_role": handoff.to_role,
                  "task": task.id})
    return Handoff(handoff_id, run_id, from_agent, handoff.to_role, handoff.payload,
                   handoff.note, task.id, tx.now)


async def post_note(tx: Txn, run_id: str, author: str, note: NewNote) -> Note:
    await require_run(tx, run_id)
    body = tx.enc.text(note.body, f"note body from {author!r}")
    tags_text, scope = _entry_rows.note_columns(tx.enc, author, note)
    row = (await tx.execute(_INSERT_NOTE, (run_id, author, tags_text, body, tx.now, scope))
           ).fetchone()
    note_id = int(row[0])
    await append_event(tx, run_id, "note.posted", _entry_rows.note_posted(note_id, author, note))
    return Note(note_id, run_id, author, body, tuple(note.tags), tx.now, scope=note.scope)


async def apply_writes(tx: Txn, run_id: str, agent_id: str | None,
                 task_id: str | None, writes: Writes | None) -> int:
    """Apply a ``Writes`` bundle authored by ``agent_id`` while working on ``task_id``.

    Tasks it creates (directly or through handoffs) get ``parent_id = task_id``.
    """
    if not writes:
        return 0
    if agent_id is None:
        raise UserError("writes need the agent_id that authored them")
    await register_agent(tx, run_id, agent_id)
    last_seq = await append_messages(tx, agent_id, task_id, writes.messages)
    for record in writes.compactions:
        await record_compaction(tx, agent_id, task_id, record)
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
