"""Approvals: a tool call waiting for a human decision, durable across restarts. Written
once for both backends, each giving its driver and dialect (``dialect``), its event log
and its lease check (``sqlite/backend.py``, ``postgres/backend.py``).

Requesting parks the task (``waiting``, lease cleared) so no worker holds it while a
human thinks; deciding puts it back in the queue, where the runtime replays up to the
step and finds the decision. A cancelled run's approvals cannot be decided.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from orchestra._errors import NotFoundError, StoreError, UserError
from orchestra._types import JSON, Approval, Event
from orchestra.store import rows as _rows
from orchestra.store.codec import new_id
from orchestra.store.dialect import Dialect, Driver
from orchestra.store.leases import LeaseInfo
from orchestra.store.protocol import Lease

X = TypeVar("X", bound=Driver)

_BY_STEP = (
    f"SELECT {_rows.APPROVAL_COLS} FROM approvals WHERE task_id = $1 AND retry = $2 AND step = $3"
)
_RUN_STATUS = "SELECT status FROM runs WHERE id = $1"
_BY_ID = f"SELECT {_rows.APPROVAL_COLS} FROM approvals WHERE id = $1{{lock}}"
_INSERT = (
    "INSERT INTO approvals (id, run_id, task_id, retry, step, tool, arguments, status, "
    "created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending', $8)"
)
_PARK_TASK = (
    "UPDATE tasks SET status = 'waiting', lease_owner = NULL, lease_expires_at = NULL, "
    "updated_at = $1 WHERE id = $2"
)
_DECIDE = f"""
UPDATE approvals SET status = $1, decided_by = $2, reason = $3, decided_at = $4
WHERE id = $5 RETURNING {_rows.APPROVAL_COLS}"""
_UNPARK_TASK = (
    "UPDATE tasks SET status = 'pending', updated_at = $1 WHERE id = $2 AND status = 'waiting' "
    "RETURNING role"
)


@dataclass(frozen=True, slots=True)
class _Statements:
    by_step: str
    run_status: str
    by_id: str
    insert: str
    park_task: str
    decide: str
    unpark_task: str

    @classmethod
    def of(cls, dialect: Dialect) -> _Statements:
        return cls(*map(dialect.sql, (_BY_STEP, _RUN_STATUS, _BY_ID, _INSERT, _PARK_TASK,
                                      _DECIDE, _UNPARK_TASK)))


class Approvals(Generic[X]):
    """The approvals' writes on one backend (what ``backend.ApprovalSQL`` names)."""

    __slots__ = ("_append_event", "_check_lease", "_sql")

    def __init__(self, dialect: Dialect,
                 append_event: Callable[[X, str, str, JSON], Awaitable[Event]],
                 check_lease: Callable[[X, str, Lease], Awaitable[LeaseInfo]]) -> None:
        self._sql = _Statements.of(dialect)
        self._append_event = append_event
        self._check_lease = check_lease

    async def request_approval(self, tx: X, task_id: str, lease: Lease, *, retry: int,
                               step: int, tool: str, arguments: JSON) -> Approval:
        """Create (or find) the approval for this step and park the task while it is pending."""
        sql, append_event = self._sql, self._append_event
        info = await self._check_lease(tx, task_id, lease)
        row = await tx.fetchrow(sql.by_step, task_id, retry, step)
        if row is None:
            args = tx.enc.json(arguments, f"arguments of tool {tool!r} awaiting approval")
            approval_id = new_id()
            await tx.fetchval(sql.insert, approval_id, info.run_id, task_id, retry, step, tool,
                              args, tx.now)
            await append_event(tx, info.run_id, "approval.requested",
                               {"approval": approval_id, "task": task_id, "step": step,
                                "tool": tool})
            approval = Approval(approval_id, info.run_id, task_id, step, tool, arguments,
                                "pending", created_at=tx.now)
        else:
            approval = _rows.approval(tuple(row))
            if approval.status != "pending":
                return approval  # already decided: the caller proceeds, the task stays running
        await tx.fetchval(sql.park_task, tx.now, task_id)
        await append_event(tx, info.run_id, "task.waiting",
                           {"task": task_id, "role": info.role, "approval": approval.id})
        return approval

    async def decide_approval(self, tx: X, approval_id: str, *, approved: bool, by: str,
                              reason: str | None) -> Approval:
        sql, append_event = self._sql, self._append_event
        row = await tx.fetchrow(sql.by_id, approval_id)
        if row is None:
            raise NotFoundError(f"approval {approval_id!r} does not exist")
        current = _rows.approval(tuple(row))
        if await tx.fetchval(sql.run_status, current.run_id) == "cancelled":
            raise UserError(
                f"approval {approval_id} belongs to run {current.run_id}, which was cancelled: "
                "a cancelled run cannot continue, so its approvals cannot be decided; start a "
                "new run instead"
            )
        if current.status != "pending":
            raise UserError(
                f"approval {approval_id} was already {current.status} by "
                f"{current.decided_by!r}; a decision cannot be changed"
            )
        status = "approved" if approved else "denied"
        reason_text = tx.enc.optional_text(reason, f"reason for approval {approval_id}")
        approval = _rows.approval(_held(await tx.fetchrow(sql.decide, status, by, reason_text,
                                                          tx.now, approval_id)))
        await append_event(tx, approval.run_id, "approval.decided",
                           {"approval": approval_id, "task": approval.task_id,
                            "approved": approved, "by": by})
        role = await tx.fetchval(sql.unpark_task, tx.now, approval.task_id)
        if role is not None:
            await append_event(tx, approval.run_id, "task.requeued",
                               {"task": approval.task_id, "role": role, "reason": "approval"})
        return approval


def _held(row: Any) -> tuple[Any, ...]:
    """A row this write must have returned (it read the row first)."""
    if row is None:
        raise StoreError("a row this transaction holds is missing; the database was changed "
                         "outside orchestra")
    return tuple(row)
