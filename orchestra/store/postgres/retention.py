"""Retention on PostgreSQL: delete finished runs completely, in writes of bounded size;
the same rules as SQLite's ``sqlite/retention.py``.

A prune picks its runs in one read, then deletes them in batches: each batch is
one write transaction touching at most about ``batch_rows`` rows. A run larger than
a batch has its events and messages (its big tables) deleted in ranges first; its
row goes last, so a prune interrupted half-way still sees the run and finishes it
next time.

The runs a prune keeps have their completed calls' token deltas folded into their
steps (``store/folding.py`` decides which): read per run, deleted by seq in
transactions of at most ``batch_rows`` events.
"""

from __future__ import annotations

from collections.abc import Sequence

import asyncpg

from orchestra._errors import NotFoundError, UserError
from orchestra._types import TERMINAL_RUN_STATUSES
from orchestra.store.folding import FOLD_KINDS_SQL, folded_seqs
from orchestra.store.postgres.txn import Txn

_LOCK = "SELECT status FROM runs WHERE id = $1 FOR UPDATE"
_IDS = "(SELECT unnest($1::text[]))"
_DELETE = (  # children before parents, so foreign keys hold at every statement
    f"DELETE FROM events WHERE run_id IN {_IDS}",
    f"DELETE FROM approvals WHERE run_id IN {_IDS}",
    f"DELETE FROM steps WHERE task_id IN (SELECT id FROM tasks WHERE run_id IN {_IDS})",
    f"DELETE FROM messages WHERE agent_id IN (SELECT id FROM agents WHERE run_id IN {_IDS})",
    f"DELETE FROM compactions WHERE agent_id IN (SELECT id FROM agents WHERE run_id IN {_IDS})",
    f"DELETE FROM agents WHERE run_id IN {_IDS}",
    f"DELETE FROM notes WHERE run_id IN {_IDS}",
    f"DELETE FROM plans WHERE run_id IN {_IDS}",
    f"DELETE FROM tasks WHERE run_id IN {_IDS}",
    f"DELETE FROM runs WHERE id IN {_IDS}",
)
_TERMINAL = "(" + ", ".join(f"'{s}'" for s in sorted(TERMINAL_RUN_STATUSES)) + ")"
_CANDIDATES = f"""
SELECT id, last_seq FROM runs
WHERE status IN {_TERMINAL} AND ($1::float8 IS NULL OR updated_at < $1)
ORDER BY updated_at DESC, id DESC OFFSET $2"""
_FIRST_EVENT = "SELECT MIN(seq) FROM events WHERE run_id = $1"
_EVENT_RANGE = "DELETE FROM events WHERE run_id = $1 AND seq < $2"
_FIRST_MESSAGE = """
SELECT m.agent_id, MIN(m.seq) FROM agents a JOIN messages m ON m.agent_id = a.id
WHERE a.run_id = $1 GROUP BY m.agent_id LIMIT 1"""
_MESSAGE_RANGE = "DELETE FROM messages WHERE agent_id = $1 AND seq < $2"
# finished runs, and (given a date) runs of any status untouched since then
_FOLD_CANDIDATES = f"""
SELECT id FROM runs WHERE status IN {_TERMINAL} OR ($1::float8 IS NOT NULL AND updated_at < $1)
ORDER BY updated_at, id"""
_FOLD_EVENTS = f"""
SELECT seq, kind, d ->> 'task', (d ->> 'step')::bigint, (d ->> 'attempt')::bigint
FROM (SELECT seq, kind, data::jsonb AS d FROM events
      WHERE run_id = $1 AND kind IN ({FOLD_KINDS_SQL})) e ORDER BY seq"""
_DELETE_SEQS = "DELETE FROM events WHERE run_id = $1 AND seq = ANY($2::bigint[])"


async def candidates(conn: asyncpg.Connection, finished_before: float | None,
                     keep: int | None) -> list[tuple[str, int]]:
    """Finished runs to prune (id, event count), as in SQLite's ``sqlite/retention.py``."""
    if finished_before is None and keep is None:
        raise UserError("prune needs --finished-before DATE or --keep N (or both)")
    if keep is not None and keep < 0:
        raise UserError(f"--keep must be >= 0, got {keep}")
    return [(r[0], r[1]) for r in await conn.fetch(_CANDIDATES, finished_before, keep or 0)]


async def delete_runs(tx: Txn, run_ids: Sequence[str]) -> int:
    """Delete finished runs and every row they own; returns the rows deleted."""
    for run_id in run_ids:
        status = await tx.fetchval(_LOCK, run_id)
        if status is None:
            raise NotFoundError(f"run {run_id!r} does not exist")
        if status not in TERMINAL_RUN_STATUSES:
            raise UserError(f"run {run_id} is {status}; cancel it first, then delete it")
    rows = 0
    for statement in _DELETE:
        rows += int((await tx.execute(statement, list(run_ids))).rsplit(" ", 1)[-1])
    return rows


async def delete_some(tx: Txn, run_id: str, batch_rows: int) -> bool:
    """Delete up to ``batch_rows`` of a large finished run's oldest events, else of one of
    its agents' oldest messages; False once it has neither."""
    first = await tx.fetchval(_FIRST_EVENT, run_id)
    if first is not None:
        await tx.execute(_EVENT_RANGE, run_id, first + batch_rows)
        return True
    row = await tx.fetchrow(_FIRST_MESSAGE, run_id)
    if row is None:
        return False
    await tx.execute(_MESSAGE_RANGE, row[0], row[1] + batch_rows)
    return True


async def fold_candidates(conn: asyncpg.Connection, finished_before: float | None
                          ) -> list[str]:
    """Runs whose completed calls' deltas a prune folds (as SQLite's ``fold_candidates``)."""
    return [r[0] for r in await conn.fetch(_FOLD_CANDIDATES, finished_before)]


async def deltas_to_fold(conn: asyncpg.Connection, run_id: str) -> list[int]:
    """The seqs of ``run_id``'s deltas whose call completed its step (``folding``)."""
    return folded_seqs(tuple(r) for r in await conn.fetch(_FOLD_EVENTS, run_id))


async def delete_events(tx: Txn, run_id: str, seqs: Sequence[int]) -> int:
    """Delete these events of ``run_id``; returns how many there were."""
    return int((await tx.execute(_DELETE_SEQS, run_id, list(seqs))).rsplit(" ", 1)[-1])
