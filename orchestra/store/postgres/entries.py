"""Typed entries and their consumptions on PostgreSQL, as SQLite's ``sqlite/entries.py``:
posted in the transaction of whatever carries them, read in posting order.

A trigger's consumption is inserted first (``ON CONFLICT DO NOTHING``): a second
transaction committing the same trigger waits on the first's row and then writes
nothing, so each (run, trigger, role) makes one task on any number of hosts. A bundle's
consumptions take two statements whatever their number (claimed, then given their
tasks' ids).
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
_CONSUME = """
INSERT INTO consumptions (run_id, trigger, role, task_id, created_at)
SELECT DISTINCT $1, t, r, '', $4::double precision FROM unnest($2::text[], $3::text[]) AS u (t, r)
ON CONFLICT DO NOTHING RETURNING trigger, role"""
_CONSUMED_BY = """
UPDATE consumptions c SET task_id = u.k
FROM unnest($2::text[], $3::text[], $4::text[]) AS u (t, r, k)
WHERE c.run_id = $1 AND c.trigger = u.t AND c.role = u.r"""
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
    """Create each trigger's task and record its consumption, unless recorded already:
    the consumptions are claimed in one statement (the rows a concurrent transaction
    holds are waited for, then skipped), their tasks made, and their task ids set in one
    more."""
    if not triggers:
        return []
    claimed = await tx.fetch(_CONSUME, run_id, [t.trigger for t in triggers],
                             [t.role for t in triggers], tx.now)
    fresh = {(r[0], r[1]) for r in claimed}
    made = []
    for trigger in triggers:
        if (trigger.trigger, trigger.role) not in fresh:
            continue
        fresh.discard((trigger.trigger, trigger.role))  # the same trigger twice: once
        task = await insert_task(tx, run_id, NewTask(
            trigger.role, trigger.input, max_attempts=trigger.max_attempts, key=trigger.key,
            cause=f"entry:{trigger.trigger}"), parent_id=parent_id)
        made.append(Consumption(run_id, trigger.trigger, trigger.role, task.id, tx.now))
    await tx.execute(_CONSUMED_BY, run_id, [c.trigger for c in made], [c.role for c in made],
                     [c.task_id for c in made])
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


# A fork (``fork``) copies the entries posted up to its point under the same ids (unique
# per run), and the consumptions whose task it copies: $1 source, $2 fork, $3 the fork
# point's time, $4... the fork's task map (old, new, status) as arrays.
_FORK_MAP = ("WITH fork_ids AS (SELECT * FROM unnest($4::text[], $5::text[], $6::text[]) "
             "AS m(old, new, status)) ")
_FORK_ENTRIES = _FORK_MAP + """
INSERT INTO entries (id, run_id, type, author, body, tags, scope, task_id, created_at)
SELECT id, $2, type, CASE WHEN left(author, length($1::text) + 1) = $1::text || '/'
        THEN $2::text || substr(author, length($1::text) + 1) ELSE author END, body, tags,
    scope, (SELECT new FROM fork_ids WHERE old = task_id), created_at
FROM entries WHERE run_id = $1 AND created_at <= $3 ORDER BY position"""
_FORK_CONSUMPTIONS = _FORK_MAP + """
INSERT INTO consumptions (run_id, trigger, role, task_id, created_at)
SELECT $2, c.trigger, c.role, m.new, c.created_at
FROM consumptions c JOIN fork_ids m ON m.old = c.task_id
WHERE c.run_id = $1 AND m.status IS NOT NULL AND c.created_at <= $3"""


async def fork_entries(tx: Txn, run_id: str, fork_id: str, at: float,
                       task_map: Sequence[Sequence[object]]) -> None:
    """Copy ``run_id``'s entries and consumptions up to ``at`` into its fork (inside
    ``fork.fork_run``; ``task_map``: its id map's columns, old, new and status first)."""
    old, new, status = (list(c) for c in task_map[:3])
    await tx.execute(_FORK_ENTRIES, run_id, fork_id, at, old, new, status)
    await tx.execute(_FORK_CONSUMPTIONS, run_id, fork_id, at, old, new, status)
