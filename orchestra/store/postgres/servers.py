"""Which processes serve which runs, on PostgreSQL: the same rows as SQLite's
``sqlite/servers.py``, on the database's clock (``now()``).

A process driving a run renews its row here as it heartbeats its leases, and marks
it expired when it stops. A live run whose rows and task leases have all expired
has no live worker.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import asyncpg

from orchestra._errors import NotFoundError, UserError

_RENEW = """
INSERT INTO run_servers (run_id, owner, seen_at, expires_at)
SELECT id, $2, extract(epoch FROM now())::float8, extract(epoch FROM now())::float8 + $3
FROM runs WHERE id = $1
ON CONFLICT (run_id, owner) DO UPDATE SET seen_at = excluded.seen_at,
    expires_at = excluded.expires_at"""
_ALIVE_UNTIL = """
SELECT r.id, GREATEST(
    COALESCE((SELECT MAX(expires_at) FROM run_servers s WHERE s.run_id = r.id), 0),
    COALESCE((SELECT MAX(lease_expires_at) FROM tasks t
              WHERE t.run_id = r.id AND t.status = 'running'), 0)),
    extract(epoch FROM now())::float8
FROM unnest($1::text[]) AS r(id)"""
_LIVE_VERSIONS = """
SELECT DISTINCT r.version FROM runs r
WHERE r.status IN ('pending', 'running', 'waiting') AND r.version != ''
  AND (EXISTS (SELECT 1 FROM run_servers s WHERE s.run_id = r.id
               AND s.expires_at > extract(epoch FROM now())::float8)
       OR EXISTS (SELECT 1 FROM tasks t WHERE t.run_id = r.id AND t.status = 'running'
                  AND t.lease_expires_at > extract(epoch FROM now())::float8))"""
# Live runs with a task claimable now, on the database's clock, oldest first: the live
# runs in order (``runs_live``), each probed for one such task. The probe is a LATERAL
# ``LIMIT 1`` ordered as ``tasks_run`` is, so the planner takes that index: as EXISTS it
# hashed every pending task, and unordered it scanned the table for the first match.
_CLAIMABLE = """
SELECT r.id FROM runs r
CROSS JOIN LATERAL (
    SELECT 1 FROM tasks t
    WHERE t.run_id = r.id AND t.status IN ('pending', 'running')
      AND CASE t.status WHEN 'pending' THEN t.not_before <= extract(epoch FROM now())::float8
               ELSE t.lease_expires_at < extract(epoch FROM now())::float8 END
    ORDER BY t.status LIMIT 1) claimable
WHERE r.status IN ('pending', 'running', 'waiting') AND NOT (r.id = ANY($1::text[]))
ORDER BY r.created_at, r.id LIMIT $2"""
_SAME_CLOCK = 1.0  # seconds: clocks closer than this are taken as one (leases are longer)


async def renew(c: asyncpg.Connection, run_id: str, owner: str,
                lease_seconds: float) -> None:
    """``owner`` serves ``run_id`` for ``lease_seconds`` more (0: it stopped), on the
    database's clock: one statement (its own transaction, one round trip)."""
    if not owner:
        raise UserError("serve_run needs a non-empty owner")
    if await c.execute(_RENEW, run_id, owner, max(lease_seconds, 0.0)) == "INSERT 0 0":
        raise NotFoundError(f"run {run_id!r} does not exist")


async def alive_until(c: asyncpg.Connection,
                      run_ids: Sequence[str]) -> dict[str, float | None]:
    """When each run's last claim to be served runs out, on the CALLER's clock: the
    times are the database's, shifted by how far it is from this host's clock, so a
    host whose clock is off does not see live runs as unserved (or dead ones as live)."""
    rows = await c.fetch(_ALIVE_UNTIL, list(run_ids))
    here = time.time()
    served: dict[str, float | None] = {}
    for run_id, until, db_now in rows:
        shift = here - db_now
        if abs(shift) < _SAME_CLOCK:
            shift = 0.0  # the round trip's own delay: the times stay exactly the stored ones
        served[run_id] = until + shift if until else None
    return served


async def live_versions(c: asyncpg.Connection) -> set[str]:
    """The versions of the live runs some live process serves now, on the database's
    clock (a renewal or a task lease not run out)."""
    return {row[0] for row in await c.fetch(_LIVE_VERSIONS)}


async def claimable_runs(c: asyncpg.Connection, limit: int, exclude: Sequence[str]) -> list[str]:
    """Up to ``limit`` live runs outside ``exclude`` with a task claimable now."""
    return [row[0] for row in await c.fetch(_CLAIMABLE, list(exclude), limit)]
