"""Which processes serve which runs: how the store tells a served run from an orphan.

A process driving a run renews its row here as it heartbeats its leases, with an
expiry on the store's clock (like a lease), and marks it expired when it stops. A
live run whose rows and task leases have all expired has no live worker: nobody
will take its tasks over until a worker, ``run`` or ``resume`` serves it again.
The rows are plain upserts and reads, so any backend (PostgreSQL: ``now()``) can
keep them the same way.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Sequence

from orchestra._errors import NotFoundError, UserError
from orchestra.store.sqlite.txn import Conn, Txn
from orchestra.store.sqlite.writer import Row

_RENEW_INSERT = "INSERT INTO run_servers (run_id, owner, seen_at, expires_at) VALUES"
_RENEW_UPSERT = ("ON CONFLICT (run_id, owner) DO UPDATE SET seen_at = excluded.seen_at, "
                 "expires_at = excluded.expires_at")
_RENEW = f"{_RENEW_INSERT} (?, ?, ?, ?) {_RENEW_UPSERT}"
# The latest moment any server or task lease of each run was known to be alive.
_ALIVE_UNTIL = """
SELECT r.value,
       MAX(COALESCE((SELECT MAX(expires_at) FROM run_servers WHERE run_id = r.value), 0),
           COALESCE((SELECT MAX(lease_expires_at) FROM tasks
                     WHERE run_id = r.value AND status = 'running'), 0))
FROM json_each(?) r"""

# The versions of live runs that a live process serves now (a renewal or a task lease).
_LIVE_VERSIONS = """
SELECT DISTINCT r.version FROM runs r
WHERE r.status IN ('pending', 'running', 'waiting') AND r.version != ''
  AND (EXISTS (SELECT 1 FROM run_servers s WHERE s.run_id = r.id AND s.expires_at > ?1)
       OR EXISTS (SELECT 1 FROM tasks t WHERE t.run_id = r.id AND t.status = 'running'
                  AND t.lease_expires_at > ?1))"""

# Live runs with a task claimable now (pending and due, or running on an expired lease),
# oldest first: the live runs in order (``runs_live``), each asked for one such task by
# ``tasks_run``, until ``limit`` are found. It grouped every claimable task by run, and
# SQLite walked all of ``tasks_run`` for it: 17 ms a look with 40,000 tasks pending,
# 0.1 ms now (``python -m benchmarks.looks`` measures both stores).
_CLAIMABLE = """
SELECT r.id FROM runs r
WHERE r.status IN ('pending', 'running', 'waiting')
  AND r.id NOT IN (SELECT value FROM json_each(?3))
  AND (EXISTS (SELECT 1 FROM tasks t WHERE t.run_id = r.id AND t.status = 'pending'
               AND t.not_before <= ?1)
       OR EXISTS (SELECT 1 FROM tasks t WHERE t.run_id = r.id AND t.status = 'running'
                  AND t.lease_expires_at < ?2))
ORDER BY r.created_at LIMIT ?4"""


async def renew(tx: Txn, run_id: str, owner: str, lease_seconds: float) -> None:
    """``owner`` serves ``run_id`` for ``lease_seconds`` more (0: it stopped serving)."""
    try:  # the foreign key refuses an unknown run: no read of the run first
        await tx.execute(_RENEW, _renewal(run_id, owner, lease_seconds, tx.now))
    except sqlite3.IntegrityError as exc:
        raise NotFoundError(f"run {run_id!r} does not exist") from exc


def renew_row(run_id: str, owner: str, lease_seconds: float, now: float) -> Row:
    """:func:`renew` as a row the writer upserts with the batch's other renewals (a run
    with no such row is refused, and :func:`renew` says so)."""
    return Row(_RENEW_INSERT, _renewal(run_id, owner, lease_seconds, now),
               (f"run_servers {run_id} {owner}",), lambda: None, tail=_RENEW_UPSERT)


def _renewal(run_id: str, owner: str, lease_seconds: float, now: float
             ) -> tuple[str, str, float, float]:
    if not owner:
        raise UserError("serve_run needs a non-empty owner")
    return (run_id, owner, now, now + max(lease_seconds, 0.0))


async def alive_until(conn: Conn, run_ids: Sequence[str]) -> dict[str, float | None]:
    """Per run, until when a worker was last known to serve it (None: never served)."""
    rows = (await conn.execute(_ALIVE_UNTIL, (json.dumps(list(run_ids)),))).fetchall()
    return {run_id: (until or None) for run_id, until in rows}


async def live_versions(conn: Conn) -> set[str]:
    """The versions some live process serves now (see ``_LIVE_VERSIONS``)."""
    return {v for (v,) in (await conn.execute(_LIVE_VERSIONS, (time.time(),))).fetchall()}


async def claimable_runs(conn: Conn, now: float, limit: int,
                         exclude: Sequence[str]) -> list[str]:
    """Up to ``limit`` live runs outside ``exclude`` with a task claimable at ``now``."""
    rows = (await conn.execute(_CLAIMABLE, (now, now, json.dumps(list(exclude)),
                                            limit))).fetchall()
    return [run_id for (run_id,) in rows]
