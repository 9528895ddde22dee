"""Runs and the version of the code they run on, in SQLite (``orchestra.store.versions``).

Schema v11 gives each run a ``version`` (empty for runs made before it: any process may
take those). A worker's look for work (:func:`claimable_runs`) names the versions it
serves, so it never finds a run of another version, and the claims filter on the same
versions (``tasks``: the claim statements; ``step``: a hand-in's claim); moving a run to
another version (:func:`move_version`) is one transaction that also writes its
``run.upgraded`` event, and refuses while a process serves the run.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace

from orchestra._errors import NotFoundError
from orchestra._types import JSON, Run
from orchestra.store import rows as _rows
from orchestra.store.sqlite.events import append_event
from orchestra.store.sqlite.servers import alive_until
from orchestra.store.sqlite.txn import Conn, Txn
from orchestra.store.versions import UPGRADED_EVENT, moved_while_served, version_changed

V12 = """ALTER TABLE runs ADD COLUMN version TEXT NOT NULL DEFAULT '';
"""

# ``servers._CLAIMABLE`` with the versions a worker serves ('' too: runs from before v11)
_CLAIMABLE = """
SELECT r.id FROM runs r
WHERE r.status IN ('pending', 'running', 'waiting')
  AND r.id NOT IN (SELECT value FROM json_each(?3))
  AND r.version IN (SELECT value FROM json_each(?5))
  AND (EXISTS (SELECT 1 FROM tasks t WHERE t.run_id = r.id AND t.status = 'pending'
               AND t.not_before <= ?1)
       OR EXISTS (SELECT 1 FROM tasks t WHERE t.run_id = r.id AND t.status = 'running'
                  AND t.lease_expires_at < ?2))
ORDER BY r.created_at LIMIT ?4"""
_VERSION = "SELECT version FROM runs WHERE id = ?"
_TASK_VERSION = "SELECT r.version FROM tasks t JOIN runs r ON r.id = t.run_id WHERE t.id = ?"
_MOVE = f"UPDATE runs SET version = ?, updated_at = ? WHERE id = ? RETURNING {_rows.RUN_COLS}"


async def claimable_runs(conn: Conn, now: float, limit: int, exclude: Sequence[str],
                         versions: Sequence[str]) -> list[str]:
    """Up to ``limit`` live runs of ``versions`` outside ``exclude`` with work due now."""
    served = json.dumps(sorted({*versions, ""}))
    rows = (await conn.execute(_CLAIMABLE, (now, now, json.dumps(list(exclude)), limit,
                                            served))).fetchall()
    return [run_id for (run_id,) in rows]


async def task_run_version(tx: Txn, task_id: str) -> str | None:
    """The version of ``task_id``'s run (None: no such task)."""
    row = (await tx.execute(_TASK_VERSION, (task_id,))).fetchone()
    return None if row is None else str(row[0])


async def move_version(tx: Txn, run_id: str, old: str, new: str, data: JSON) -> Run:
    """Move ``run_id`` from version ``old`` to ``new`` with its ``run.upgraded`` event;
    ``UserError`` if it is no longer on ``old`` or a live process serves it."""
    row = (await tx.execute(_VERSION, (run_id,))).fetchone()
    if row is None:
        raise NotFoundError(f"run {run_id!r} does not exist")
    if row[0] != old:
        raise version_changed(run_id, old, row[0])
    until = (await alive_until(tx.conn, (run_id,))).get(run_id)
    if until is not None and until >= tx.now:
        raise moved_while_served(run_id, until - tx.now)
    moved = (await tx.execute(_MOVE, (new, tx.now, run_id))).fetchone()
    event = await append_event(tx, run_id, UPGRADED_EVENT, data)
    run = _rows.run(moved)
    return replace(run, last_seq=event.seq, cost=float(run.cost))
