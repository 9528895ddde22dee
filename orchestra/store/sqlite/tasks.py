"""Tasks and leases: create, claim, heartbeat, requeue, fence.

``attempt`` is the fencing token: a claim bumps it, and every write a worker makes
under its lease checks ``(status, lease_owner, attempt)`` in the same transaction,
so a worker whose task was requeued and reclaimed cannot write over the new owner.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence

from orchestra._errors import NotFoundError, UserError
from orchestra._types import Task, TaskStatus
from orchestra.store import rows as _rows
from orchestra.store.codec import new_id
from orchestra.store.leases import LEASE_COLUMNS, LeaseInfo, lease_info
from orchestra.store.protocol import Lease, NewTask
from orchestra.store.rules import check_new_task
from orchestra.store.sqlite.events import append_event, require_run
from orchestra.store.sqlite.txn import Conn, Txn
from orchestra.store.versions import served

_BY_KEY = f'SELECT {_rows.TASK_COLS} FROM tasks WHERE run_id = ? AND "key" = ?'
_INSERT = (
    "INSERT INTO tasks (id, run_id, role, input, status, attempt, lease_owner, lease_expires_at, "
    '  max_attempts, not_before, parent_id, cause, "key", from_agent, handoff_note, created_at, '
    "  updated_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_LEASE = f"SELECT {LEASE_COLUMNS} FROM tasks WHERE id = ?"
_CLAIM = f"""
UPDATE tasks SET status = 'running', attempt = attempt + 1, lease_owner = ?1,
    lease_expires_at = ?2, updated_at = ?3
WHERE id IN (
    SELECT t.id FROM tasks t JOIN runs r ON r.id = t.run_id
    WHERE t.status = 'pending' AND t.not_before <= ?3
      AND r.status IN ('pending', 'running', 'waiting')
      AND (?4 IS NULL OR t.run_id = ?4)
      AND (?5 IS NULL OR t.role IN (SELECT value FROM json_each(?5)))
      AND (?7 IS NULL OR r.version IN (SELECT value FROM json_each(?7)))
    ORDER BY t.created_at, t.rowid
    LIMIT ?6)
RETURNING {_rows.TASK_COLS}"""
# ?7 (and ``_EXPIRED``'s ?5): the versions a claimer serves, as JSON (``versions.served``;
# NULL: any), so a claim never takes a task of a run on code it does not run.
# Leases past their expiry, on the store's clock: their owner stopped heartbeating
# (it died, or hung for a whole lease), so the task is anyone's to take. The
# ``tasks_leased`` index holds only running tasks, a few per worker. (On PostgreSQL
# the same select takes ``FOR UPDATE SKIP LOCKED`` and compares with ``now()``.)
_EXPIRED = """
SELECT t.id, t.lease_owner FROM tasks t JOIN runs r ON r.id = t.run_id
WHERE t.status = 'running' AND t.lease_expires_at < ?1
  AND r.status IN ('pending', 'running', 'waiting')
  AND (?2 IS NULL OR t.run_id = ?2)
  AND (?3 IS NULL OR t.role IN (SELECT value FROM json_each(?3)))
  AND (?5 IS NULL OR r.version IN (SELECT value FROM json_each(?5)))
ORDER BY t.created_at, t.rowid
LIMIT ?4"""
_TAKE_OVER = f"""
UPDATE tasks SET attempt = attempt + 1, lease_owner = ?1, lease_expires_at = ?2, updated_at = ?3
WHERE id = ?4 AND status = 'running' AND lease_expires_at < ?3
RETURNING {_rows.TASK_COLS}"""
_HEARTBEAT = (
    "UPDATE tasks SET lease_expires_at = ?, updated_at = ? "
    "WHERE id = ? AND status = 'running' AND lease_owner = ? AND attempt = ? RETURNING 1"
)
_EXISTS = "SELECT 1 FROM tasks WHERE id = ?"
_RUN_HAS_PENDING = "SELECT 1 FROM tasks WHERE run_id = ? AND status = 'pending' LIMIT 1"
# whether a claim of the run could take anything now (a superset: roles and the run's
# status are the claim's to check)
_RUN_HAS_CLAIMABLE = """
SELECT 1 FROM tasks WHERE run_id = ?1 AND ((status = 'pending' AND not_before <= ?2)
                                           OR (status = 'running' AND lease_expires_at < ?2))
LIMIT 1"""
_LOST_LEASES = f"""
SELECT {_rows.TASK_COLS} FROM tasks
WHERE status = 'running' AND (?1 IS NULL OR run_id = ?1)
  AND (lease_expires_at < ?2 OR lease_owner IN (SELECT value FROM json_each(?3)))
ORDER BY created_at"""
_REQUEUE = (
    "UPDATE tasks SET status = 'pending', lease_owner = NULL, lease_expires_at = NULL, "
    f"updated_at = ? WHERE id = ? RETURNING {_rows.TASK_COLS}"
)


async def check_lease(tx: Txn, task_id: str, lease: Lease) -> LeaseInfo:
    """Raise ``LeaseLostError`` unless ``lease`` still holds ``task_id``; nothing is written."""
    return lease_info(task_id, lease, (await tx.execute(_LEASE, (task_id,))).fetchone())


async def insert_task(tx: Txn, run_id: str, new: NewTask, *, parent_id: str | None = None,
                cause: str | None = None, announce: bool = True,
                handoff: tuple[str, str] | None = None) -> Task:
    """Create a pending task (or, when ``tx.claimer`` has room, a claimed one) and
    (``announce``) its ``task.created`` event.

    A task whose ``key`` already exists in the run is not created again: the
    existing one is returned and nothing is written. A handoff's task is announced
    by the ``handoff.posted`` event, which names it, so it passes ``announce=False``
    and ``handoff=(from_agent, note)``: the task's row is the handoff's record.
    """
    check_new_task(new.role, new.max_attempts)
    if new.key is not None:
        row = (await tx.execute(_BY_KEY, (run_id, new.key))).fetchone()
        if row is not None:
            return _rows.task(row)
    task_id = new_id()
    parent = new.parent_id if new.parent_id is not None else parent_id
    why = new.cause if new.cause is not None else cause
    input_text = tx.enc.json(new.input, f"handoff payload to {new.role!r}" if handoff is not None
                          else f"task input for {new.role!r}")
    if announce:
        await append_event(tx, run_id, "task.created",  # first: it refuses an unknown run
                     {"task": task_id, "role": new.role, "cause": why})
    else:
        await require_run(tx, run_id)
    from_agent, note = handoff if handoff is not None else (None, None)
    now, claimer = tx.now, tx.claimer
    status: TaskStatus = "pending"
    attempt, owner, lease_ends = 0, None, None
    if claimer is not None and claimer.take(new.role, new.not_before, now):
        status, attempt, owner = "running", 1, claimer.owner
        lease_ends = now + claimer.lease_seconds
    (await tx.execute(_INSERT, (task_id, run_id, new.role, input_text, status, attempt, owner,
                           lease_ends, new.max_attempts, new.not_before, parent, why, new.key,
                           from_agent, note, now, now)))
    task = Task(task_id, run_id, new.role, new.input, status, attempt=attempt,
                max_attempts=new.max_attempts, lease_owner=owner, lease_expires_at=lease_ends,
                not_before=new.not_before, parent_id=parent, cause=why, key=new.key,
                created_at=now, updated_at=now)
    if claimer is not None and owner is not None:
        claimer.claimed.append(task)
    return task


async def insert_tasks(tx: Txn, run_id: str, tasks: Sequence[NewTask],
                 *, parent_id: str | None = None,
                 cause: str | None = None) -> list[Task]:
    return [await insert_task(tx, run_id, t, parent_id=parent_id, cause=cause)
            for t in tasks]


async def claim(tx: Txn, owner: str, *,
          run_id: str | None, roles: Collection[str] | None, lease_seconds: float,
          versions: Collection[str] | None = None) -> Task | None:
    """Lease to ``owner`` a task whose lease expired, else the oldest claimable pending
    task, of a run on one of ``versions`` (None: any), or return None."""
    tasks = await take_over(tx, owner, run_id=run_id, roles=roles, lease_seconds=lease_seconds,
                      limit=1, versions=versions)
    if tasks:
        await announce_claims(tx, tasks, owner)
        return tasks[0]
    tasks = await _claim(tx, owner, run_id=run_id, roles=roles,
                   lease_seconds=lease_seconds, limit=1, versions=versions)
    return tasks[0] if tasks else None


async def take_over(tx: Txn, owner: str, *, run_id: str | None, roles: Collection[str] | None,
              lease_seconds: float, limit: int,
              versions: Collection[str] | None = None) -> list[Task]:
    """Lease to ``owner`` up to ``limit`` running tasks whose lease expired (oldest first).

    The attempt is counted (it is the fencing token: the old owner, if it still
    lives, can no longer write), and a ``task.requeued`` event names the old owner.
    The caller announces the claims. A live owner's lease never expires: it
    heartbeats every third of the lease.
    """
    if not owner:
        raise UserError("claim_task needs a non-empty owner")
    if limit <= 0:
        return []
    roles_json = None if roles is None else json.dumps(sorted(roles))
    taken = []
    for task_id, old_owner in (await tx.execute(_EXPIRED, (tx.now, run_id, roles_json,
                                                    limit, _served(versions)))).fetchall():
        row = (await tx.execute(_TAKE_OVER, (owner, tx.now + lease_seconds, tx.now,
                                      task_id))).fetchone()
        if row is None:
            continue
        task = _rows.task(row)
        await append_event(tx, task.run_id, "task.requeued",
                     {"task": task.id, "role": task.role, "attempt": task.attempt - 1,
                      "owner": old_owner, "cause": "lease expired"})
        taken.append(task)
    return taken


async def _claim(tx: Txn, owner: str, *,
           run_id: str | None, roles: Collection[str] | None, lease_seconds: float,
           limit: int, announce: bool = True,
           versions: Collection[str] | None = None) -> list[Task]:
    """Lease up to ``limit`` of the oldest claimable pending tasks to ``owner``."""
    if not owner:
        raise UserError("claim_task needs a non-empty owner")
    roles_json = None if roles is None else json.dumps(sorted(roles))
    rows = (await tx.execute(_CLAIM, (owner, tx.now + lease_seconds, tx.now, run_id, roles_json,
                                 limit, _served(versions)))).fetchall()
    # RETURNING gives rows in no set order; hand them out oldest first, as claimed
    tasks = sorted((_rows.task(row) for row in rows), key=lambda t: t.created_at)
    if announce:
        await announce_claims(tx, tasks, owner)
    return tasks


def _served(versions: Collection[str] | None) -> str | None:
    """``versions.served`` as the JSON the claim statements take."""
    values = served(versions)
    return None if values is None else json.dumps(values)


async def announce_claims(tx: Txn, tasks: Sequence[Task], owner: str) -> None:
    """The ``task.claimed`` events of ``tasks``. (A claim also journals that the task's
    first step is in flight: see ``tasks.retry_attempt``.)"""
    for task in tasks:
        await append_event(tx, task.run_id, "task.claimed",
                     {"task": task.id, "role": task.role, "attempt": task.attempt,
                      "owner": owner})


async def claim_many(tx: Txn, owner: str, *,
               run_id: str | None, capacity: dict[str, int], limit: int,
               lease_seconds: float, announce: bool = True,
               expired: bool = True, versions: Collection[str] | None = None) -> list[Task]:
    """Claim up to ``limit`` tasks, at most ``capacity[role]`` per role, of runs on one of
    ``versions`` (None: any), in one transaction.

    Tasks whose lease expired (their worker died) come first, then pending tasks,
    oldest first: any process serving a run takes over a dead worker's work.

    With ``announce=False`` the caller announces them with :func:`announce_claims`.
    ``expired=False`` leaves expired leases to the next ordinary claim (a worker handing
    in a result takes its next work without scanning for dead workers' tasks).
    """
    free = {role: n for role, n in capacity.items() if n > 0}
    claimed: list[Task] = []
    if free and limit > 0 and expired:  # a dead worker's tasks first: the oldest work
        claimed = await take_over(tx, owner, run_id=run_id, roles=tuple(free),
                            lease_seconds=lease_seconds, limit=min(limit, sum(free.values())),
                            versions=versions)
        for task in claimed:
            free[task.role] -= 1
            if not free[task.role]:
                del free[task.role]
        if announce:
            await announce_claims(tx, claimed, owner)
    if run_id is not None and (await tx.execute(_RUN_HAS_PENDING, (run_id,))).fetchone() is None:
        return claimed  # the usual case for a busy run: an index probe, not a claim scan
    while free and len(claimed) < limit:
        # As many as every free role can still take: fewer back means none are left,
        # so a worker with room for more learns it without a second, empty claim.
        want = min(limit - len(claimed), *free.values())
        tasks = await _claim(tx, owner, run_id=run_id, roles=tuple(free),
                       lease_seconds=lease_seconds, limit=want, announce=False,
                       versions=versions)
        if announce:
            await announce_claims(tx, tasks, owner)
        for task in tasks:
            claimed.append(task)
            free[task.role] -= 1
            if not free[task.role]:
                del free[task.role]
        if len(tasks) < want:
            break
    return claimed


async def claimable_in_run(conn: Conn, run_id: str, now: float) -> bool:
    """Whether the run has a task a claim could take at ``now``: a claim that cannot is
    answered by this read, without taking the write lock (it is what the claim would have
    found had it run at the read's snapshot)."""
    return (await conn.execute(_RUN_HAS_CLAIMABLE, (run_id, now))).fetchone() is not None


_FAILED_TASKS = "SELECT id FROM tasks WHERE run_id = ? AND status = 'failed' ORDER BY created_at"
_RETRY_FAILED = f"""
UPDATE tasks SET status = 'pending', retries = retries + 1, error = NULL, not_before = 0,
    lease_owner = NULL, lease_expires_at = NULL, updated_at = ?, retry_attempt = attempt + 1
WHERE id = ? RETURNING {_rows.TASK_COLS}"""


async def retry_failed(tx: Txn, run_id: str) -> list[Task]:
    """Give every failed task of a run another attempt (a fresh journal: ``retries + 1``)."""
    out = []
    for (task_id,) in (await tx.execute(_FAILED_TASKS, (run_id,))).fetchall():
        task = _rows.task((await tx.execute(_RETRY_FAILED, (tx.now, task_id))).fetchone())
        await append_event(tx, run_id, "task.requeued",
                     {"task": task.id, "role": task.role, "retries": task.retries,
                      "cause": "resume"})
        out.append(task)
    return out


async def heartbeat(tx: Txn, task_id: str, lease: Lease, lease_seconds: float) -> bool:
    """Extend a held lease (no event: it changes no state anyone follows)."""
    cur = (await tx.execute(_HEARTBEAT, (tx.now + lease_seconds, tx.now, task_id, lease.owner,
                                  lease.attempt)))
    if cur.fetchone() is not None:
        return True
    if (await tx.execute(_EXISTS, (task_id,))).fetchone() is None:
        raise NotFoundError(f"task {task_id!r} does not exist")
    return False


async def release_leases(tx: Txn, *, run_id: str | None,
                   owners: Collection[str]) -> list[Task]:
    """Requeue running tasks whose lease expired or whose owner is in ``owners``."""
    lost = (await tx.execute(_LOST_LEASES, (run_id, tx.now, json.dumps(list(owners))))).fetchall()
    released = []
    for old in lost:
        task = _rows.task((await tx.execute(_REQUEUE, (tx.now, old[0]))).fetchone())
        await append_event(tx, task.run_id, "task.requeued",
                     {"task": task.id, "role": task.role, "attempt": task.attempt,
                      "owner": old[8]})
        released.append(task)
    return released
