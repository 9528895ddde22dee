"""Typed entries and their consumptions on SQLite: posted in the transaction of whatever
carries them (a step, a task's end, a direct ``post_entry``), read in posting order.

A trigger's task and its consumption row commit together; the consumption's primary
key (run, trigger, role) and the task's key (``NewTrigger.key``) make a trigger
committed twice (a resumed coordinator deciding again) write nothing the second time.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from orchestra._entries import Consumption, Entry
from orchestra.store import entry_rows as _rows
from orchestra.store.entry_protocol import NewEntry, NewTrigger
from orchestra.store.protocol import NewTask
from orchestra.store.sqlite.events import append_event, batched_events, require_run
from orchestra.store.sqlite.reads import require_run as require_run_read
from orchestra.store.sqlite.tasks import insert_task
from orchestra.store.sqlite.txn import Conn, Txn

_INSERT = (
    "INSERT INTO entries (id, run_id, type, author, body, tags, scope, task_id, created_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING position"
)
_CONSUMED = """
SELECT trigger, role FROM consumptions
WHERE run_id = ?1 AND (trigger, role) IN (
    SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?2))"""
_CONSUME = (
    "INSERT INTO consumptions (run_id, trigger, role, task_id, created_at) VALUES (?, ?, ?, ?, ?)"
)
_ENTRIES = f"""
SELECT {_rows.ENTRY_COLS} FROM entries
WHERE run_id = ?1 AND (?2 IS NULL OR type = ?2) AND position > ?3 ORDER BY position"""
_CONSUMPTIONS = (f"SELECT {_rows.CONSUMPTION_COLS} FROM consumptions WHERE run_id = ? "
                 "ORDER BY created_at, trigger, role")


async def post_entries(tx: Txn, run_id: str, author: str, task_id: str | None,
                       entries: Sequence[NewEntry]) -> list[Entry]:
    """Post ``entries`` authored by ``author`` (while working on ``task_id``), each with
    its ``entry.posted`` event (which names its scope, never its body)."""
    if entries:
        await require_run(tx, run_id)
    posted = []
    for new in entries:
        body, tags, scope = _rows.encoded(tx.enc, author, new)
        row = (await tx.execute(_INSERT, (new.id, run_id, new.type, author, body, tags, scope,
                                          task_id, tx.now))).fetchone()
        await append_event(tx, run_id, "entry.posted",
                           {"entry": new.id, "type": new.type, "author": author,
                            "scope": str(new.scope)})
        posted.append(Entry(new.id, run_id, int(row[0]), new.type, author, new.body,
                            new.tags, new.scope, task_id, tx.now))
    return posted


async def post_triggers(tx: Txn, run_id: str, parent_id: str | None,
                        triggers: Sequence[NewTrigger]) -> list[Consumption]:
    """Create each trigger's task and record its consumption, unless recorded already.

    One read finds the triggers already consumed; the tasks' events are batched (one
    write of the run's row) and the consumptions inserted in one statement."""
    if not triggers:
        return []
    wanted = json.dumps([[t.trigger, t.role] for t in triggers])
    done = {(r[0], r[1]) for r in (await tx.execute(_CONSUMED, (run_id, wanted))).fetchall()}
    made = []
    async with batched_events(tx):
        for trigger in triggers:
            if (trigger.trigger, trigger.role) in done:
                continue
            done.add((trigger.trigger, trigger.role))
            task = await insert_task(tx, run_id, NewTask(
                trigger.role, trigger.input, max_attempts=trigger.max_attempts,
                key=trigger.key, cause=f"entry:{trigger.trigger}"), parent_id=parent_id)
            made.append(Consumption(run_id, trigger.trigger, trigger.role, task.id, tx.now))
    await tx.executemany(_CONSUME, [(c.run_id, c.trigger, c.role, c.task_id, c.created_at)
                                    for c in made])
    return made


async def get_entries(c: Conn, run_id: str, type: str | None, after: int) -> list[Entry]:
    rows = (await c.execute(_ENTRIES, (run_id, type, after))).fetchall()
    if not rows:
        await require_run_read(c, run_id)
    return [_rows.entry(tuple(r)) for r in rows]


async def get_consumptions(c: Conn, run_id: str) -> list[Consumption]:
    rows = (await c.execute(_CONSUMPTIONS, (run_id,))).fetchall()
    if not rows:
        await require_run_read(c, run_id)
    return [_rows.consumption(tuple(r)) for r in rows]


# A fork (``fork``) copies the entries posted up to its point under the same ids (unique
# per run), and the consumptions whose task it copies: ?1 source, ?2 fork, ?3 the fork
# point's time; the task map is the fork's ``fork_ids`` table.
_FORK_ENTRIES = """
INSERT INTO entries (id, run_id, type, author, body, tags, scope, task_id, created_at)
SELECT id, ?2, type, CASE WHEN substr(author, 1, length(?1) + 1) = ?1 || '/'
        THEN ?2 || substr(author, length(?1) + 1) ELSE author END, body, tags, scope,
    (SELECT new FROM fork_ids WHERE old = task_id), created_at
FROM entries WHERE run_id = ?1 AND created_at <= ?3 ORDER BY position"""
_FORK_CONSUMPTIONS = """
INSERT INTO consumptions (run_id, trigger, role, task_id, created_at)
SELECT ?2, c.trigger, c.role, m.new, c.created_at
FROM consumptions c JOIN fork_ids m ON m.old = c.task_id
WHERE c.run_id = ?1 AND m.status IS NOT NULL AND c.created_at <= ?3"""


async def fork_entries(tx: Txn, run_id: str, fork_id: str, at: float) -> None:
    """Copy ``run_id``'s entries and consumptions up to ``at`` into its fork (inside
    ``fork.fork_run``, while its task map is filled)."""
    await tx.execute(_FORK_ENTRIES, (run_id, fork_id, at))
    await tx.execute(_FORK_CONSUMPTIONS, (run_id, fork_id, at))
