"""Typed entries and their consumptions on PostgreSQL, as SQLite's ``sqlite/entries.py``:
posted in the transaction of whatever carries them, read in posting order.

A trigger's consumption is inserted first (``ON CONFLICT DO NOTHING``): a second
transaction committing the same trigger waits on the first's row and then writes
nothing, so each (run, trigger, role) makes one task on any number of hosts.
"""

from __future__ import annotations

from collections.abc import Sequence

import asyncpg

from orchestra._entries import Consumption, Entry
from orchestra.store import entry_rows as _rows
from orchestra.store.entry_protocol import NewEntry, NewTrigger
from orchestra.store.postgres.events import append_event, require_run
from orchestra.store.postgres.reads import require_run as require_run_read
from orchestra.store.postgres.tasks import insert_task
from orchestra.store.postgres.txn import Txn
from orchestra.store.protocol import NewTask

_INSERT = (
    "INSERT INTO entries (id, run_id, type, author, body, tags, scope, task_id, created_at) "
    "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING position"
)
_CONSUME = (
    "INSERT INTO consumptions (run_id, trigger, role, task_id, created_at) "
    "VALUES ($1, $2, $3, '', $4) ON CONFLICT DO NOTHING RETURNING 1"
)
_CONSUMED_BY = (
    "UPDATE consumptions SET task_id = $4 WHERE run_id = $1 AND trigger = $2 AND role = $3"
)
_ENTRIES = f"""
SELECT {_rows.ENTRY_COLS} FROM entries
WHERE run_id = $1 AND ($2::text IS NULL OR type = $2) AND position > $3 ORDER BY position"""
_CONSUMPTIONS = (f"SELECT {_rows.CONSUMPTION_COLS} FROM consumptions WHERE run_id = $1 "
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
        position = await tx.fetchval(_INSERT, new.id, run_id, new.type, author, body, tags,
                                     scope, task_id, tx.now)
        await append_event(tx, run_id, "entry.posted",
                           {"entry": new.id, "type": new.type, "author": author,
                            "scope": str(new.scope)})
        posted.append(Entry(new.id, run_id, int(position), new.type, author, new.body,
                            new.tags, new.scope, task_id, tx.now))
    return posted


async def post_triggers(tx: Txn, run_id: str, parent_id: str | None,
                        triggers: Sequence[NewTrigger]) -> list[Consumption]:
    """Create each trigger's task and record its consumption, unless recorded already."""
    made = []
    for trigger in triggers:
        if await tx.fetchval(_CONSUME, run_id, trigger.trigger, trigger.role, tx.now) is None:
            continue
        task = await insert_task(tx, run_id, NewTask(
            trigger.role, trigger.input, max_attempts=trigger.max_attempts, key=trigger.key,
            cause=f"entry:{trigger.trigger}"), parent_id=parent_id)
        await tx.execute(_CONSUMED_BY, run_id, trigger.trigger, trigger.role, task.id)
        made.append(Consumption(run_id, trigger.trigger, trigger.role, task.id, tx.now))
    return made


async def get_entries(c: asyncpg.Connection, run_id: str, type: str | None,
                      after: int) -> list[Entry]:
    rows = await c.fetch(_ENTRIES, run_id, type, after)
    if not rows:
        await require_run_read(c, run_id)
    return [_rows.entry(tuple(r)) for r in rows]


async def get_consumptions(c: asyncpg.Connection, run_id: str) -> list[Consumption]:
    rows = await c.fetch(_CONSUMPTIONS, run_id)
    if not rows:
        await require_run_read(c, run_id)
    return [_rows.consumption(tuple(r)) for r in rows]
