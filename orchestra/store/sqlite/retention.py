"""Retention: delete finished runs completely, in writes of bounded size.

A prune picks its runs in one read, then deletes them in batches: each batch is
one write transaction touching at most about ``batch_rows`` rows, so live runs'
writes queue behind it only briefly. A run larger than a batch has its events and
messages (its big tables) deleted in ranges first; its row goes last, so a prune
interrupted half-way still sees the run and finishes it next time.

The runs a prune keeps have their completed calls' token deltas folded into their
steps (``store/folding.py`` decides which): read per run, deleted by seq in writes
of at most ``batch_rows`` events.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from orchestra._errors import NotFoundError, UserError
from orchestra._types import TERMINAL_RUN_STATUSES
from orchestra.store.folding import FOLD_KINDS_SQL, folded_seqs
from orchestra.store.sqlite.txn import Conn, Txn

_TERMINAL = "(" + ", ".join(f"'{s}'" for s in sorted(TERMINAL_RUN_STATUSES)) + ")"
_CANDIDATES = f"""
SELECT id, last_seq FROM runs
WHERE status IN {_TERMINAL} AND (?1 IS NULL OR updated_at < ?1)
ORDER BY updated_at DESC, id DESC LIMIT -1 OFFSET ?2"""
_IDS = "(SELECT value FROM json_each(?1))"
# Rows owned through a task or an agent go first, then every table with a run_id
# (found in the schema, so a table added later is pruned too), then tasks, then runs:
# foreign keys hold at every statement.
_THROUGH_PARENTS = (
    f"DELETE FROM steps WHERE task_id IN (SELECT id FROM tasks WHERE run_id IN {_IDS})",
    f"DELETE FROM messages WHERE agent_id IN (SELECT id FROM agents WHERE run_id IN {_IDS})",
    f"DELETE FROM compactions WHERE agent_id IN (SELECT id FROM agents WHERE run_id IN {_IDS})",
)
_TABLES_WITH_RUN_ID = """
SELECT m.name FROM sqlite_master m JOIN pragma_table_info(m.name) c ON c.name = 'run_id'
WHERE m.type = 'table' AND m.name NOT IN ('tasks', 'runs') ORDER BY m.name"""
_STATUS = "SELECT status FROM runs WHERE id = ?"
_FIRST_EVENT = "SELECT MIN(seq) FROM events WHERE run_id = ?"
_EVENT_RANGE = "DELETE FROM events WHERE run_id = ? AND seq < ?"
_FIRST_MESSAGE = """
SELECT a.id, (SELECT MIN(seq) FROM messages m WHERE m.agent_id = a.id) AS first
FROM agents a WHERE a.run_id = ? AND first IS NOT NULL LIMIT 1"""
_MESSAGE_RANGE = "DELETE FROM messages WHERE agent_id = ? AND seq < ?"
# finished runs, and (given a date) runs of any status untouched since then
_FOLD_CANDIDATES = f"""
SELECT id FROM runs WHERE status IN {_TERMINAL} OR (?1 IS NOT NULL AND updated_at < ?1)
ORDER BY updated_at, id"""
_FOLD_EVENTS = f"""
SELECT seq, kind, json_extract(data, '$.task'), json_extract(data, '$.step'),
       json_extract(data, '$.attempt')
FROM events WHERE run_id = ? AND kind IN ({FOLD_KINDS_SQL}) ORDER BY seq"""
_DELETE_SEQS = """
DELETE FROM events WHERE run_id = ?1 AND seq IN (SELECT value FROM json_each(?2)) RETURNING 1"""


async def candidates(conn: Conn, finished_before: float | None,
               keep: int | None) -> list[tuple[str, int]]:
    """Finished runs to prune (id, event count): updated before ``finished_before``, and
    not among the ``keep`` most recently finished."""
    if finished_before is None and keep is None:
        raise UserError("prune needs --finished-before DATE or --keep N (or both)")
    if keep is not None and keep < 0:
        raise UserError(f"--keep must be >= 0, got {keep}")
    return [(r[0], r[1]) for r in (await conn.execute(_CANDIDATES, (finished_before, keep or 0)))]


async def delete_runs(tx: Txn, run_ids: Sequence[str]) -> int:
    """Delete finished runs and every row they own; returns the rows deleted."""
    for run_id in run_ids:
        row = (await tx.execute(_STATUS, (run_id,))).fetchone()
        if row is None:
            raise NotFoundError(f"run {run_id!r} does not exist")
        if row[0] not in TERMINAL_RUN_STATUSES:
            raise UserError(f"run {run_id} is {row[0]}; cancel it first, then delete it")
    ids = json.dumps(list(run_ids))
    before: int = (await tx.execute("SELECT total_changes()")).fetchone()[0]
    for statement in _THROUGH_PARENTS:
        await tx.execute(statement, (ids,))
    for (table,) in (await tx.execute(_TABLES_WITH_RUN_ID)).fetchall():
        await tx.execute(f'DELETE FROM "{table}" WHERE run_id IN {_IDS}', (ids,))
    await tx.execute(f"DELETE FROM tasks WHERE run_id IN {_IDS}", (ids,))
    await tx.execute(f"DELETE FROM runs WHERE id IN {_IDS}", (ids,))
    after: int = (await tx.execute("SELECT total_changes()")).fetchone()[0]
    return after - before


async def delete_some(tx: Txn, run_id: str, batch_rows: int) -> bool:
    """Delete up to ``batch_rows`` of a large finished run's oldest events, else of one of
    its agents' oldest messages; False once it has neither (then :func:`delete_runs` it)."""
    row = (await tx.execute(_FIRST_EVENT, (run_id,))).fetchone()
    if row[0] is not None:
        await tx.execute(_EVENT_RANGE, (run_id, row[0] + batch_rows))
        return True
    row = (await tx.execute(_FIRST_MESSAGE, (run_id,))).fetchone()
    if row is None:
        return False
    await tx.execute(_MESSAGE_RANGE, (row[0], row[1] + batch_rows))
    return True


async def fold_candidates(conn: Conn, finished_before: float | None) -> list[str]:
    """Runs whose completed calls' deltas a prune folds: every finished run, and with
    ``finished_before`` every run untouched since then."""
    return [r[0] for r in await conn.execute(_FOLD_CANDIDATES, (finished_before,))]


async def deltas_to_fold(conn: Conn, run_id: str) -> list[int]:
    """The seqs of ``run_id``'s deltas whose call completed its step (``folding``)."""
    return folded_seqs(await conn.execute(_FOLD_EVENTS, (run_id,)))


async def delete_events(tx: Txn, run_id: str, seqs: Sequence[int]) -> int:
    """Delete these events of ``run_id``; returns how many there were."""
    return len((await tx.execute(_DELETE_SEQS, (run_id, json.dumps(list(seqs))))).fetchall())
