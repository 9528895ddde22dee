"""Writes a worker makes under its lease: the step journal and the task's end.

A step's journal row, the board writes it produced, the run's totals and its
event commit together, so on replay a completed step is found with exactly its
effects, and an interrupted one is found with none of them.
"""

from __future__ import annotations

import json

from orchestra._errors import UserError
from orchestra._types import JSON, StepKind, Task
from orchestra.store import rows as _rows
from orchestra.store.codec import short
from orchestra.store.leases import LeaseInfo
from orchestra.store.protocol import Lease, StepResult, Writes
from orchestra.store.rules import already_completed, check_kind
from orchestra.store.sqlite.board import apply_writes, register_agent
from orchestra.store.sqlite.events import append_event, append_step_event, batched_events
from orchestra.store.sqlite.tasks import check_lease
from orchestra.store.sqlite.txn import Txn

# A new row's attempts: a retry's first step was in flight in every claim of the retry
# (the claim journals it: no row is written when it starts), so each claim after the
# one that began the retry is a reissue of it; any other step starts at one attempt.
_FIRST_ATTEMPTS = """CASE WHEN ?3 = 1 THEN (SELECT MAX(1, attempt - retry_attempt + 1)
    FROM tasks WHERE id = ?1) ELSE 1 END"""
_START_STEP = f"""
INSERT INTO steps (task_id, retry, step, kind, name, input_digest, status, attempts, started_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'started', {_FIRST_ATTEMPTS}, ?7)
ON CONFLICT (task_id, retry, step) DO UPDATE SET
    attempts = attempts + 1, status = 'started', kind = excluded.kind, name = excluded.name,
    input_digest = excluded.input_digest, started_at = excluded.started_at,
    output = NULL, error = NULL, finished_at = NULL
WHERE status = 'started'
RETURNING attempts"""
_COMPLETE_STEP = f"""
INSERT INTO steps (task_id, retry, step, kind, name, input_digest, status, output, error,
    attempts, tokens_in, tokens_out, cost, started_at, finished_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, {_FIRST_ATTEMPTS}, ?10, ?11, ?12, ?13, ?13)
ON CONFLICT (task_id, retry, step) DO UPDATE SET
    kind = excluded.kind, name = excluded.name, input_digest = excluded.input_digest,
    status = excluded.status, output = excluded.output, error = excluded.error,
    tokens_in = excluded.tokens_in, tokens_out = excluded.tokens_out, cost = excluded.cost,
    finished_at = excluded.finished_at
WHERE status != 'completed'
RETURNING attempts"""
_FINISH_TASK = f"""
UPDATE tasks SET status = ?, result = ?, error = ?, lease_owner = NULL, lease_expires_at = NULL,
    updated_at = ?, result_msg = ?
WHERE id = ? RETURNING {_rows.TASK_COLS}"""
_MESSAGE_ROWID = "SELECT rowid FROM messages WHERE agent_id = ? AND seq = ?"
_RETRY_TASK = f"""
UPDATE tasks SET status = 'pending', retries = retries + 1, not_before = ?, error = ?,
    lease_owner = NULL, lease_expires_at = NULL, updated_at = ?, retry_attempt = attempt + 1
WHERE id = ? RETURNING {_rows.TASK_COLS}"""


async def start_step(tx: Txn, task_id: str, retry: int, step: int,
               kind: StepKind, name: str, input_digest: str, lease: Lease) -> None:
    """Journal that a step is about to run; a restarted step counts one more attempt.

    Only a step found ``started`` (its last execution never recorded an outcome: the
    process running it died or lost its lease) counts a new attempt, i.e. a reissue.
    A step already completed, failed or cancelled is left alone: the runtime replays
    it, and a start arriving after the step's own outcome (a model call's start is
    committed alongside the call) changes nothing.
    """
    check_kind(kind)
    info = await check_lease(tx, task_id, lease)
    row = (await tx.execute(_START_STEP, (task_id, retry, step, kind, name, input_digest,
                                     tx.now))).fetchone()
    if row is not None and kind != "model":  # model starts are frequent and effect-free
        await append_event(tx, info.run_id, "step.started",
                     {"task": task_id, "step": step, "kind": kind, "name": name,
                      "attempt": row[0]})


def _last_reply(writes: Writes) -> str | None:
    """The last message appended, if it is a reply long enough to be worth storing once."""
    if not writes.messages:
        return None
    last = writes.messages[-1]
    return last.content if last.role == "assistant" and len(last.content) >= 64 else None


def _dedupe_reply(output: JSON, writes: Writes, agent_id: str, last_seq: int) -> JSON:
    """A model step's reply (its text and its tool calls' arguments) is also the last
    message it appended: store it once.

    The journal row keeps a pointer (``text_seq``) that ``get_steps`` resolves, so a
    long-lived agent's file grows by its messages, not by twice its messages. ``calls``
    becomes null when the message holds the same calls (``_resolve_reply`` reads them
    back from it); a row written before that keeps its own copy and reads as before.
    """
    if not isinstance(output, dict) or last_seq <= 0 or not writes.messages:
        return output
    last = writes.messages[-1]
    if last.role != "assistant" or output.get("text") != last.content:
        return output
    calls = [[c.id, c.name, c.arguments] for c in last.tool_calls]
    same_calls = bool(calls) and output.get("calls") == calls
    argument_chars = sum(len(c.arguments) for c in last.tool_calls) if same_calls else 0
    if len(last.content) < 64 and argument_chars < 64:
        return output
    pointer: dict[str, JSON] = {**output, "text": None, "text_seq": last_seq,
                                "text_agent": agent_id}
    if same_calls:
        pointer["calls"] = None
    return pointer


def _is_last_reply(result: JSON, writes: Writes) -> bool:
    """Whether ``result`` is exactly the JSON of the last (assistant) message appended."""
    text = _last_reply(writes)
    if text is None or not isinstance(result, dict | list) or text[:1] not in "{[":
        return False
    try:
        reply = json.loads(text)
    except ValueError:
        return False
    return same_json(reply, result)


def same_json(a: JSON, b: JSON) -> bool:
    """Equal as JSON values: unlike ``==``, ``1``, ``1.0`` and ``true`` all differ."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        assert isinstance(b, dict)
        return a.keys() == b.keys() and all(same_json(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        assert isinstance(b, list)
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


async def complete_step(tx: Txn, result: StepResult, lease: Lease,
                  agent_id: str, writes: Writes | None,
                  info: LeaseInfo | None = None) -> int:
    """Record a step's output (or error), apply its writes and add it to the run's totals.

    Returns the seq of the last message it appended (0 if none).
    """
    async with batched_events(tx):
        return await _complete_step(tx, result, lease, agent_id, writes, info)


async def _complete_step(tx: Txn, result: StepResult, lease: Lease,
                   agent_id: str, writes: Writes | None,
                   info: LeaseInfo | None) -> int:
    check_kind(result.kind)
    if info is None:
        info = await check_lease(tx, result.task_id, lease)
    status = "completed" if result.error is None else "failed"
    field = f"step {result.step} of task {result.task_id}"
    stored = result.output
    last_seq = 0
    if writes:
        last_seq = await apply_writes(tx, info.run_id, agent_id, result.task_id, writes)
        stored = _dedupe_reply(stored, writes, agent_id, last_seq)
    else:
        await register_agent(tx, info.run_id, agent_id)  # its journal counts in agent_infos
    output = None if stored is None else tx.enc.json(stored, field + " output")
    error = tx.enc.optional_text(result.error, field + " error")
    done = await tx.execute(_COMPLETE_STEP, (
        result.task_id, result.retry, result.step, result.kind, result.name, result.input_digest,
        status, output, error, result.tokens_in, result.tokens_out, result.cost, tx.now))
    row = done.fetchone()
    if row is None:
        raise already_completed(result.task_id, result.retry, result.step, result.name)
    await append_step_event(tx, info.run_id, f"step.{status}",
                      {"task": result.task_id, "step": result.step, "kind": result.kind,
                       "name": result.name, "tokens_in": result.tokens_in,
                       "tokens_out": result.tokens_out},
                      tokens_in=result.tokens_in, tokens_out=result.tokens_out,
                      cost=result.cost)
    return last_seq


async def complete_task(tx: Txn, task_id: str, lease: Lease, result: JSON, agent_id: str,
                  writes: Writes | None, step: StepResult | None) -> Task:
    """End a task successfully: its last step, its writes, its result and its event."""
    async with batched_events(tx):
        return await _complete_task(tx, task_id, lease, result, agent_id, writes, step)


async def _complete_task(tx: Txn, task_id: str, lease: Lease, result: JSON, agent_id: str,
                   writes: Writes | None, step: StepResult | None) -> Task:
    info = await check_lease(tx, task_id, lease)
    if step is not None:
        if step.task_id != task_id:
            raise UserError(f"await complete_task({task_id!r}) got a step of task {step.task_id!r}")
        last_seq = await complete_step(tx, step, lease, agent_id, writes, info)
    else:
        last_seq = await apply_writes(tx, info.run_id, agent_id, task_id, writes)
    result_text: str | None = tx.enc.json(result, f"result of task {task_id}")
    result_msg = None
    if writes and _is_last_reply(result, writes):
        row = (await tx.execute(_MESSAGE_ROWID, (agent_id, last_seq))).fetchone()
        if row is not None:
            result_text, result_msg = None, row[0]
    task = _rows.task((await tx.execute(_FINISH_TASK, ("completed", result_text, None, tx.now,
                                                  result_msg, task_id))).fetchone())
    await append_event(tx, info.run_id, "task.completed",
                 {"task": task_id, "role": info.role})
    return task


async def fail_task(tx: Txn, task_id: str, lease: Lease, error: str,
              retry_at: float | None, agent_id: str | None, writes: Writes | None) -> Task:
    """Requeue the task for a later retry if its budget allows, else fail it for good."""
    info = await check_lease(tx, task_id, lease)
    await apply_writes(tx, info.run_id, agent_id, task_id, writes)
    error_text = tx.enc.text(error, f"error of task {task_id}")
    if retry_at is not None and info.retries + 1 < info.max_attempts:
        task = _rows.task((await tx.execute(_RETRY_TASK, (retry_at, error_text, tx.now,
                                                     task_id))).fetchone())
        await append_event(tx, info.run_id, "task.retrying",
                     {"task": task_id, "role": info.role, "retries": task.retries,
                      "not_before": retry_at, "error": short(error)})
        return task
    task = _rows.task((await tx.execute(_FINISH_TASK, ("failed", None, error_text, tx.now, None,
                                                  task_id))).fetchone())
    await append_event(tx, info.run_id, "task.failed",
                 {"task": task_id, "role": info.role, "error": short(error)})
    return task
