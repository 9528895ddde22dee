"""Tasks and leases on PostgreSQL: create, claim (``FOR UPDATE SKIP LOCKED``), heartbeat,
requeue, fence.

``attempt`` is the fencing token, as in SQLite. Here many transactions run at once,
so a fenced write locks its task's row (``check_lease`` reads it ``FOR UPDATE``):
nobody can requeue or reclaim the task between the check and the write. Every
time (``now``) is the database's clock, read once per transaction by the caller.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import asyncpg

from orchestra._errors import NotFoundError, UserError
from orchestra._types import Task
from orchestra.store import rows as _rows
from orchestra.store.codec import new_id
from orchestra.store.leases import LEASE_COLUMNS, LeaseInfo, lease_info
from orchestra.store.postgres.events import append_event, require_run, whole
from orchestra.store.postgres.txn import Txn
from orchestra.store.protocol import Lease, NewTask
from orchestra.store.rules import check_new_task
from orchestra.store.versions import served

TASK_COLS = ", ".join("tasks." + c.strip() for c in (
    'id, run_id, role, input, status, attempt, retries, max_attempts, lease_owner, '
    'lease_expires_at, not_before, result, error, parent_id, cause, "key", created_at, '
    'updated_at, retry_attempt').split(", "))
TASK_NAMES = [c.removeprefix("tasks.").strip('"') for c in TASK_COLS.split(", ")]
"""The columns of ``TASK_COLS`` by name (to read a task from a row of ``tasks``)."""
_BY_KEY = f'SELECT {TASK_COLS} FROM tasks WHERE run_id = $1 AND "key" = $2'
_INSERT = (
    "INSERT INTO tasks (id, run_id, role, input, status, max_attempts, not_before, parent_id, "
    '  cause, "key", from_agent, handoff_note, created_at, updated_at) '
    "VALUES ($1, $2, $3, $4, 'pending', $5, $6, $7, $8, $9, $10, $11, $12, $12)"
)
_LEASE = f"SELECT {LEASE_COLUMNS} FROM tasks WHERE id = $1 FOR UPDATE"
_CLAIM = f"""
WITH picked AS (
    SELECT t.id FROM tasks t JOIN runs r ON r.id = t.run_id
    WHERE t.status = 'pending' AND t.not_before <= $3
      AND r.status IN ('pending', 'running', 'waiting')
      AND ($4::text IS NULL OR t.run_id = $4)
      AND ($5::text[] IS NULL OR t.role = ANY($5::text[]))
      AND ($7::text[] IS NULL OR r.version = ANY($7::text[]))
    ORDER BY t.created_at, t.position
    LIMIT $6
    FOR UPDATE OF t SKIP LOCKED)
UPDATE tasks SET status = 'running', attempt = tasks.attempt + 1, lease_owner = $1,
    lease_expires_at = $2, updated_at = $3
FROM picked WHERE tasks.id = picked.id
RETURNING {TASK_COLS}, tasks.position"""
# $7 (both claims): the versions the claimer serves (``versions.served``; NULL: any), so a
# claim never takes a task of a run on code it does not run.
# Leases past their expiry (their owner stopped heartbeating): anyone's to take, with
# the attempt counted; SKIP LOCKED as for pending tasks.
_TAKE_OVER = f"""
WITH picked AS (
    SELECT t.id, t.lease_owner FROM tasks t JOIN runs r ON r.id = t.run_id
    WHERE t.status = 'running' AND t.lease_expires_at < $3
      AND r.status IN ('pending', 'running', 'waiting')
      AND ($4::text IS NULL OR t.run_id = $4)
      AND ($5::text[] IS NULL OR t.role = ANY($5::text[]))
      AND ($7::text[] IS NULL OR r.version = ANY($7::text[]))
    ORDER BY t.created_at, t.position
    LIMIT $6
    FOR UPDATE OF t SKIP LOCKED)
UPDATE tasks SET attempt = tasks.attempt + 1, lease_owner = $1, lease_expires_at = $2,
    updated_at = $3
FROM picked WHERE tasks.id = picked.id
RETURNING {TASK_COLS}, tasks.position, picked.lease_owner"""
_HEARTBEAT = (
    "UPDATE tasks SET lease_expires_at = $1, updated_at = $2 "
    "WHERE id = $3 AND status = 'running' AND lease_owner = $4 AND attempt = $5"
)
_EXISTS = "SELECT 1 FROM tasks WHERE id = $1"
_LOST_LEASES = f"""
SELECT {TASK_COLS} FROM tasks
WHERE status = 'running' AND ($1::text IS NULL OR run_id = $1)
  AND (lease_expires_at < $2 OR lease_owner = ANY($3::text[]))
ORDER BY created_at, position
FOR UPDATE SKIP LOCKED"""
_REQUEUE = (
    "UPDATE tasks SET status = 'pending', lease_owner = NULL, lease_expires_at = NULL, "
    f"updated_at = $1 WHERE id = $2 RETURNING {TASK_COLS}"
)
_FAILED_TASKS = (
    "SELECT id FROM tasks WHERE run_id = $1 AND status = 'failed' ORDER BY created_at, position "
    "FOR UPDATE"
)
_RETRY_FAILED = f"""
UPDATE tasks SET status = 'pending', retries = retries + 1, error = NULL, not_before = 0,
    lease_owner = NULL, lease_expires_at = NULL, updated_at = $1, retry_attempt = attempt + 1
WHERE id = $2 RETURNING {TASK_COLS}"""


async def check_lease(tx: Txn, task_id: str, lease: Lease) -> LeaseInfo:
    """Lock the task's row; raise ``LeaseLostError`` unless ``lease`` still holds it."""
    row = await tx.fetchrow(_LEASE, task_id)
    return lease_info(task_id, lease, None if row is None else tuple(row))


async def insert_task(tx: Txn, run_id: str, new: NewTask, *, parent_id: str | None = None,
                      cause: str | None = None, announce: bool = True,
                      handoff: tuple[str, str] | None = None) -> Task:
    """Create a pending task and (``announce``) its ``task.created`` event; a ``key``
    already in the run returns the existing task and writes nothing."""
    check_new_task(new.role, new.max_attempts)
    if new.key is not None:
        row = await tx.fetchrow(_BY_KEY, run_id, new.key)
        if row is not None:
            return _rows.task(tuple(row))
    task_id = new_id()
    parent = new.parent_id if new.parent_id is not None else parent_id
    why = new.cause if new.cause is not None else cause
    input_text = tx.enc.json(new.input, f"handoff payload to {new.role!r}" if handoff is not None
                             else f"task input for {new.role!r}")
    if announce:
        await append_event(tx, run_id, "task.created",
                           {"task": task_id, "role": new.role, "cause": why})
    else:
        await require_run(tx, run_id)
    from_agent, note = handoff if handoff is not None else (None, None)
    await tx.execute(_INSERT, task_id, run_id, new.role, input_text, new.max_attempts,
                     float(new.not_before), parent, why, new.key, from_agent, note, tx.now)
    return Task(task_id, run_id, new.role, new.input, "pending", max_attempts=new.max_attempts,
                not_before=float(new.not_before), parent_id=parent, cause=why, key=new.key,
                created_at=tx.now, updated_at=tx.now)


async def insert_tasks(tx: Txn, run_id: str, tasks: Sequence[NewTask], *,
                       parent_id: str | None = None, cause: str | None = None) -> list[Task]:
    return [await insert_task(tx, run_id, t, parent_id=parent_id, cause=cause)
            for t in tasks]


async def claim(tx: Txn, owner: str, *, run_id: str | None, roles: Collection[str] | None,
                lease_seconds: float, limit: int = 1, expired: bool = True,
                versions: Collection[str] | None = None) -> list[Task]:
    """Lease up to ``limit`` of the oldest claimable pending tasks to ``owner`` (after
    the tasks whose lease expired, unless not ``expired``), of runs on one of
    ``versions`` (None: any).

    ``SKIP LOCKED`` passes over rows another transaction is claiming right now, so
    claimers on many hosts never wait on each other and never take the same task.
    """
    if not owner:
        raise UserError("claim_task needs a non-empty owner")
    role_list, versions_list = None if roles is None else sorted(roles), served(versions)
    taken = await tx.fetch(_TAKE_OVER, owner, tx.now + lease_seconds, tx.now, run_id, role_list,
                           limit, versions_list) if expired else []
    # each row: the task's columns, then its position (then, taken over, its old owner)
    n = len(TASK_NAMES)
    for r in sorted(taken, key=lambda r: (r[16], r[n])):
        await append_event(tx, r[1], "task.requeued",
                           {"task": r[0], "role": r[2], "attempt": r[5] - 1,
                            "owner": r[n + 1], "cause": "lease expired"})
    rows = [tuple(r)[:n + 1] for r in taken]
    if len(rows) < limit:
        rows += [tuple(r) for r in await tx.fetch(_CLAIM, owner, tx.now + lease_seconds, tx.now,
                                                  run_id, role_list, limit - len(rows),
                                                  versions_list)]
    rows = sorted(rows, key=lambda r: (r[16], r[n]))  # RETURNING has no order: oldest first
    tasks = [_rows.task(tuple(r)[:n]) for r in rows]
    for task in tasks:
        await append_event(tx, task.run_id, "task.claimed",
                           {"task": task.id, "role": task.role, "attempt": task.attempt,
                            "owner": owner})
    return tasks


async def claim_many(tx: Txn, owner: str, *, run_id: str | None, capacity: dict[str, int],
                     limit: int, lease_seconds: float, expired: bool = True,
                     versions: Collection[str] | None = None) -> list[Task]:
    """Claim up to ``limit`` tasks, at most ``capacity[role]`` per role, in one transaction
    (``expired=False``: no takeover of expired leases, as a hand-in's claim, see SQLite's)."""
    free = {role: n for role, n in capacity.items() if n > 0}
    claimed: list[Task] = []
    while free and len(claimed) < limit:
        want = min(limit - len(claimed), *free.values())
        tasks = await claim(tx, owner, run_id=run_id, roles=tuple(free),
                            lease_seconds=lease_seconds, limit=want, expired=expired,
                            versions=versions)
        for task in tasks:
            claimed.append(task)
            free[task.role] -= 1
            if not free[task.role]:
                del free[task.role]
        if len(tasks) < want:
            break
    return claimed


async def heartbeat(tx: Txn, task_id: str, lease: Lease, lease_seconds: float) -> bool:
    """Extend a held lease on the database's clock (no event)."""
    status = await tx.execute(_HEARTBEAT, tx.now + lease_seconds, tx.now, task_id, lease.owner,
                              lease.attempt)
    if status == "UPDATE 1":
        return True
    if await tx.fetchval(_EXISTS, task_id) is None:
        raise NotFoundError(f"task {task_id!r} does not exist")
    return False


async def release_leases(tx: Txn, *, run_id: str | None, owners: Collection[str]) -> list[Task]:
    """Requeue running tasks whose lease expired (by the database's clock) or whose
    owner is in ``owners``."""
    lost = await tx.fetch(_LOST_LEASES, run_id, tx.now, list(owners))
    released = []
    for old in lost:
        task = _rows.task(whole(await tx.fetchrow(_REQUEUE, tx.now, old[0])))
        await append_event(tx, task.run_id, "task.requeued",
                           {"task": task.id, "role": task.role, "attempt": task.attempt,
                            "owner": old[8]})
        released.append(task)
    return released


async def retry_failed(tx: Txn, run_id: str) -> list[Task]:
    """Give every failed task of a run another attempt (a fresh journal: ``retries + 1``)."""
    out = []
    for (task_id,) in await tx.fetch(_FAILED_TASKS, run_id):
        task = _rows.task(whole(await tx.fetchrow(_RETRY_FAILED, tx.now, task_id)))
        await append_event(tx, run_id, "task.requeued",
                           {"task": task.id, "role": task.role, "retries": task.retries,
                            "cause": "resume"})
        out.append(task)
    return out


_CLAIM_AT_ONCE = ("SELECT * FROM orchestra_claim($1, $2, $3, $4, $5, $6, "
                  "extract(epoch FROM now())::float8, $7)")


async def claim_many_at_once(c: asyncpg.Connection, owner: str, *, run_id: str | None,
                             capacity: dict[str, int], limit: int, lease_seconds: float,
                             versions: Collection[str] | None = None) -> list[Task]:
    """``claim_many`` as one statement (``orchestra_claim``, schema v5; its version filter
    v10): one round trip."""
    free = sorted((role, n) for role, n in capacity.items() if n > 0)
    if free and not owner:
        raise UserError("claim_task needs a non-empty owner")
    rows = await c.fetch(_CLAIM_AT_ONCE, owner, [r for r, _ in free], [n for _, n in free],
                         limit, run_id, float(lease_seconds), served(versions))
    return [_rows.task(tuple(r[name] for name in TASK_NAMES)) for r in rows]
