"""Writes a worker makes under its lease on PostgreSQL: the step journal and the task's end.

A step's journal row, the board writes it produced, the run's totals and its
event commit in one transaction; the task's row is locked by ``check_lease`` for
the whole of it, so a requeue cannot slip in between the check and the write.
"""

from __future__ import annotations

from orchestra._errors import UserError
from orchestra._types import JSON, StepKind, Task
from orchestra.store import rows as _rows
from orchestra.store.codec import short
from orchestra.store.leases import LeaseInfo
from orchestra.store.postgres.board import append_messages, apply_writes
from orchestra.store.postgres.events import append_event, append_step_event, whole
from orchestra.store.postgres.tasks import TASK_COLS, check_lease
from orchestra.store.postgres.txn import Txn
from orchestra.store.protocol import Lease, StepResult, Writes
from orchestra.store.rules import already_completed, check_kind

# A new row's attempts: each claim of a retry after the one that began it reissued the
# retry's first step (a claim journals it: no row is written when it starts).
_FIRST_ATTEMPTS = """CASE WHEN $3 = 1 THEN (SELECT GREATEST(1, attempt - retry_attempt + 1)
    FROM tasks WHERE id = $1) ELSE 1 END"""
_START_STEP = f"""
INSERT INTO steps (task_id, retry, step, kind, name, input_digest, status, attempts, started_at)
VALUES ($1, $2, $3, $4, $5, $6, 'started', {_FIRST_ATTEMPTS}, $7)
ON CONFLICT (task_id, retry, step) DO UPDATE SET
    attempts = steps.attempts + 1, status = 'started', kind = excluded.kind,
    name = excluded.name, input_digest = excluded.input_digest,
    started_at = excluded.started_at, output = NULL, error = NULL, finished_at = NULL
WHERE steps.status <> 'completed'
RETURNING attempts"""
_COMPLETE_STEP = f"""
INSERT INTO steps (task_id, retry, step, kind, name, input_digest, status, output, error,
    attempts, tokens_in, tokens_out, cost, started_at, finished_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, {_FIRST_ATTEMPTS}, $10, $11, $12, $13, $13)
ON CONFLICT (task_id, retry, step) DO UPDATE SET
    kind = excluded.kind, name = excluded.name, input_digest = excluded.input_digest,
    status = excluded.status, output = excluded.output, error = excluded.error,
    tokens_in = excluded.tokens_in, tokens_out = excluded.tokens_out, cost = excluded.cost,
    finished_at = excluded.finished_at
WHERE steps.status <> 'completed'
RETURNING attempts"""
_FINISH_TASK = f"""
UPDATE tasks SET status = $1, result = $2, error = $3, lease_owner = NULL,
    lease_expires_at = NULL, updated_at = $4
WHERE id = $5 RETURNING {TASK_COLS}"""
_RETRY_TASK = f"""
UPDATE tasks SET status = 'pending', retries = retries + 1, not_before = $1, error = $2,
    lease_owner = NULL, lease_expires_at = NULL, updated_at = $3, retry_attempt = attempt + 1
WHERE id = $4 RETURNING {TASK_COLS}"""


async def start_step(tx: Txn, task_id: str, retry: int, step: int, kind: StepKind, name: str,
                     input_digest: str, lease: Lease) -> None:
    """Journal that a step is about to run; a restarted step counts one more attempt."""
    check_kind(kind)
    info = await check_lease(tx, task_id, lease)
    attempts = await tx.fetchval(_START_STEP, task_id, retry, step, kind, name, input_digest,
                                 tx.now)
    if attempts is not None and kind != "model":  # model starts are frequent and effect-free
        await append_event(tx, info.run_id, "step.started",
                           {"task": task_id, "step": step, "kind": kind, "name": name,
                            "attempt": attempts})


async def complete_step(tx: Txn, result: StepResult, lease: Lease, agent_id: str,
                        writes: Writes | None, info: LeaseInfo | None = None) -> None:
    """Record a step's output (or error), apply its writes and add it to the run's totals."""
    check_kind(result.kind)
    if info is None:
        info = await check_lease(tx, result.task_id, lease)
    status = "completed" if result.error is None else "failed"
    field = f"step {result.step} of task {result.task_id}"
    if writes:
        await apply_writes(tx, info.run_id, agent_id, result.task_id, writes)
    else:  # its journal counts in agent_infos
        await append_messages(tx, info.run_id, agent_id, result.task_id, ())
    output = None if result.output is None else tx.enc.json(result.output, field + " output")
    error = tx.enc.optional_text(result.error, field + " error")
    attempts = await tx.fetchval(
        _COMPLETE_STEP, result.task_id, result.retry, result.step, result.kind, result.name,
        result.input_digest, status, output, error, result.tokens_in, result.tokens_out,
        float(result.cost), tx.now)
    if attempts is None:
        raise already_completed(result.task_id, result.retry, result.step, result.name)
    await append_step_event(tx, info.run_id, f"step.{status}",
                            {"task": result.task_id, "step": result.step, "kind": result.kind,
                             "name": result.name, "tokens_in": result.tokens_in,
                             "tokens_out": result.tokens_out},
                            tokens_in=result.tokens_in, tokens_out=result.tokens_out,
                            cost=result.cost)


async def complete_task(tx: Txn, task_id: str, lease: Lease, result: JSON, agent_id: str,
                        writes: Writes | None, step: StepResult | None) -> Task:
    """End a task successfully: its last step, its writes, its result and its event."""
    info = await check_lease(tx, task_id, lease)
    if step is not None:
        if step.task_id != task_id:
            raise UserError(f"complete_task({task_id!r}) got a step of task {step.task_id!r}")
        await complete_step(tx, step, lease, agent_id, writes, info)
    else:
        await apply_writes(tx, info.run_id, agent_id, task_id, writes)
    result_text = tx.enc.json(result, f"result of task {task_id}")
    task = _rows.task(whole(await tx.fetchrow(_FINISH_TASK, "completed", result_text, None, tx.now,
                                              task_id)))
    await append_event(tx, info.run_id, "task.completed",
                       {"task": task_id, "role": info.role})
    return task


async def fail_task(tx: Txn, task_id: str, lease: Lease, error: str, retry_at: float | None,
                    agent_id: str | None, writes: Writes | None) -> Task:
    """Requeue the task for a later retry if its budget allows, else fail it for good."""
    info = await check_lease(tx, task_id, lease)
    await apply_writes(tx, info.run_id, agent_id, task_id, writes)
    error_text = tx.enc.text(error, f"error of task {task_id}")
    if retry_at is not None and info.retries + 1 < info.max_attempts:
        task = _rows.task(whole(await tx.fetchrow(_RETRY_TASK, float(retry_at), error_text, tx.now,
                                                  task_id)))
        await append_event(tx, info.run_id, "task.retrying",
                           {"task": task_id, "role": info.role, "retries": task.retries,
                            "not_before": retry_at, "error": short(error)})
        return task
    task = _rows.task(whole(await tx.fetchrow(_FINISH_TASK, "failed", None, error_text, tx.now,
                                              task_id)))
    await append_event(tx, info.run_id, "task.failed",
                       {"task": task_id, "role": info.role, "error": short(error)})
    return task
