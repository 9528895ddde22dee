"""Approvals on PostgreSQL: a tool call waiting for a human decision, durable across
restarts; the same rules as SQLite's ``sqlite/approvals.py``.

Requesting parks the task (``waiting``, lease cleared) so no worker holds it
while a human thinks; deciding puts it back in the queue, where the runtime
replays up to the step and finds the decision.
"""

from __future__ import annotations

from orchestra._errors import NotFoundError, UserError
from orchestra._types import JSON, Approval
from orchestra.store import rows as _rows
from orchestra.store.codec import new_id
from orchestra.store.postgres.events import append_event, whole
from orchestra.store.postgres.tasks import check_lease
from orchestra.store.postgres.txn import Txn
from orchestra.store.protocol import Lease

_APPROVAL_BY_STEP = (
    f"SELECT {_rows.APPROVAL_COLS} FROM approvals WHERE task_id = $1 AND retry = $2 AND step = $3"
)
_APPROVAL_BY_ID = f"SELECT {_rows.APPROVAL_COLS} FROM approvals WHERE id = $1 FOR UPDATE"
_INSERT_APPROVAL = (
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


async def request_approval(tx: Txn, task_id: str, lease: Lease, *, retry: int, step: int,
                           tool: str, arguments: JSON) -> Approval:
    """Create (or find) the approval for this step and park the task while it is pending."""
    info = await check_lease(tx, task_id, lease)
    row = await tx.fetchrow(_APPROVAL_BY_STEP, task_id, retry, step)
    if row is None:
        args = tx.enc.json(arguments, f"arguments of tool {tool!r} awaiting approval")
        approval_id = new_id()
        await tx.execute(_INSERT_APPROVAL, approval_id, info.run_id, task_id, retry, step, tool,
                         args, tx.now)
        await append_event(tx, info.run_id, "approval.requested",
                           {"approval": approval_id, "task": task_id, "step": step,
                            "tool": tool})
        approval = Approval(approval_id, info.run_id, task_id, step, tool, arguments, "pending",
                            created_at=tx.now)
    else:
        approval = _rows.approval(tuple(row))
        if approval.status != "pending":
            return approval  # already decided: the caller proceeds, the task stays running
    await tx.execute(_PARK_TASK, tx.now, task_id)
    await append_event(tx, info.run_id, "task.waiting",
                       {"task": task_id, "role": info.role, "approval": approval.id})
    return approval


async def decide_approval(tx: Txn, approval_id: str, *, approved: bool, by: str,
                          reason: str | None) -> Approval:
    row = await tx.fetchrow(_APPROVAL_BY_ID, approval_id)
    if row is None:
        raise NotFoundError(f"approval {approval_id!r} does not exist")
    current = _rows.approval(tuple(row))
    if current.status != "pending":
        raise UserError(
            f"approval {approval_id} was already {current.status} by {current.decided_by!r}; "
            "a decision cannot be changed"
        )
    status = "approved" if approved else "denied"
    reason_text = tx.enc.optional_text(reason, f"reason for approval {approval_id}")
    approval = _rows.approval(whole(await tx.fetchrow(_DECIDE, status, by, reason_text, tx.now,
                                                      approval_id)))
    await append_event(tx, approval.run_id, "approval.decided",
                       {"approval": approval_id, "task": approval.task_id, "approved": approved,
                        "by": by})
    role = await tx.fetchval(_UNPARK_TASK, tx.now, approval.task_id)
    if role is not None:
        await append_event(tx, approval.run_id, "task.requeued",
                           {"task": approval.task_id, "role": role, "reason": "approval"})
    return approval
