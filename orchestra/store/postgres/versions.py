"""Runs and the version of the code they run on, in PostgreSQL (``orchestra.store.versions``).

Schema v8 gives each run a ``version`` (empty for runs made before it: any process may
take those), and ``orchestra_create_run`` a last argument that sets it, so a run is still
made in one statement. A worker's look for work (:func:`claimable_runs`) names the
versions it serves, so it never finds, let alone claims, a run of another version;
:func:`move_version` moves a run with its ``run.upgraded`` event in one transaction, and
refuses while a process serves it (the run's row locked first, as a status change does).
"""

from __future__ import annotations

from collections.abc import Sequence

import asyncpg

from orchestra._errors import NotFoundError
from orchestra._types import JSON, Run
from orchestra.store import rows as _rows
from orchestra.store.postgres.events import append_event, whole
from orchestra.store.postgres.txn import Txn
from orchestra.store.versions import UPGRADED_EVENT, moved_while_served, version_changed

V9 = """
ALTER TABLE runs ADD COLUMN version text NOT NULL DEFAULT '';
DROP FUNCTION orchestra_create_run(text, text, text, text, text[], text[], text[], integer[],
                                   double precision[], text[], text[], text[]);
CREATE FUNCTION orchestra_create_run(p_run text, p_pipeline text, p_input text,
                                     p_event text, t_id text[], t_role text[],
                                     t_input text[], t_max integer[],
                                     t_not_before double precision[], t_parent text[],
                                     t_cause text[], t_event text[], p_version text)
RETURNS SETOF runs
LANGUAGE plpgsql AS $$
DECLARE
    v_now double precision := extract(epoch FROM now())::float8;
    v_n integer := coalesce(cardinality(t_id), 0);
    v runs;
BEGIN
    INSERT INTO runs (id, pipeline, input, status, created_at, updated_at, last_seq, version)
    VALUES (p_run, p_pipeline, p_input, 'pending', v_now, v_now, 1 + v_n, p_version)
    ON CONFLICT (id) DO NOTHING
    RETURNING * INTO v;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'OR005', MESSAGE = 'run ' || p_run || ' exists';
    END IF;
    INSERT INTO events (run_id, seq, kind, data, at)
    VALUES (p_run, 1, 'run.created', p_event, v_now);
    IF v_n > 0 THEN
        INSERT INTO events (run_id, seq, kind, data, at)
        SELECT p_run, 1 + e.i, 'task.created', e.d, v_now
        FROM unnest(t_event) WITH ORDINALITY AS e(d, i);
        INSERT INTO tasks (id, run_id, role, input, status, max_attempts, not_before,
                           parent_id, cause, "key", from_agent, handoff_note, created_at,
                           updated_at)
        SELECT t.id, p_run, t.r, t.inp, 'pending', t.m, t.nb, t.par, t.ca, NULL, NULL, NULL,
               v_now, v_now
        FROM unnest(t_id, t_role, t_input, t_max, t_not_before, t_parent, t_cause)
            WITH ORDINALITY AS t(id, r, inp, m, nb, par, ca, o)
        ORDER BY t.o;
    END IF;
    RETURN NEXT v;
END $$;
"""

# ``servers._CLAIMABLE`` with the versions a worker serves ('' too: runs from before v8)
_CLAIMABLE = """
SELECT r.id FROM runs r
CROSS JOIN LATERAL (
    SELECT 1 FROM tasks t
    WHERE t.run_id = r.id AND t.status IN ('pending', 'running')
      AND CASE t.status WHEN 'pending' THEN t.not_before <= extract(epoch FROM now())::float8
               ELSE t.lease_expires_at < extract(epoch FROM now())::float8 END
    ORDER BY t.status LIMIT 1) claimable
WHERE r.status IN ('pending', 'running', 'waiting') AND NOT (r.id = ANY($1::text[]))
  AND r.version = ANY($3::text[])
ORDER BY r.created_at, r.id LIMIT $2"""
_LOCK = "SELECT version FROM runs WHERE id = $1 FOR UPDATE"
# until when a process serves the run, on the database's clock (``servers._ALIVE_UNTIL``)
_SERVED_FOR = """
SELECT GREATEST(
    COALESCE((SELECT MAX(expires_at) FROM run_servers WHERE run_id = $1), 0),
    COALESCE((SELECT MAX(lease_expires_at) FROM tasks WHERE run_id = $1
              AND status = 'running'), 0)) - extract(epoch FROM now())::float8"""
_MOVE = "UPDATE runs SET version = $1, updated_at = $2 WHERE id = $3"
_GET = f"SELECT {_rows.RUN_COLS} FROM runs WHERE id = $1"


async def claimable_runs(c: asyncpg.Connection, limit: int, exclude: Sequence[str],
                         versions: Sequence[str]) -> list[str]:
    """Up to ``limit`` live runs of ``versions`` outside ``exclude`` with work due now."""
    served = sorted({*versions, ""})
    return [row[0] for row in await c.fetch(_CLAIMABLE, list(exclude), limit, served)]


async def move_version(tx: Txn, run_id: str, old: str, new: str, data: JSON) -> Run:
    """Move ``run_id`` from version ``old`` to ``new`` with its ``run.upgraded`` event;
    ``UserError`` if it is no longer on ``old`` or a live process serves it."""
    found = await tx.fetchrow(_LOCK, run_id)
    if found is None:
        raise NotFoundError(f"run {run_id!r} does not exist")
    if found[0] != old:
        raise version_changed(run_id, old, found[0])
    left = float(await tx.fetchval(_SERVED_FOR, run_id))
    if left >= 0:
        raise moved_while_served(run_id, left)
    await tx.execute(_MOVE, new, tx.now, run_id)
    await append_event(tx, run_id, UPGRADED_EVENT, data)
    return _rows.run(whole(await tx.fetchrow(_GET, run_id)))
