"""A step's writes in one round trip: one call of ``orchestra_step`` (schema v5; its
claim's version filter v10).

The general path (``journal``) takes a transaction of about ten statements, each a
round trip to the server, with the task's and the run's rows locked across all of
them. The usual step (a successful step whose writes are messages and key-less
handoffs: ``rules.fits``, the same cut as SQLite's one-record path) goes
here instead: Python checks and encodes everything, the function writes it, and the
one statement is its own transaction. Anything else takes the general path.
"""

from __future__ import annotations

import json
from typing import Any

import asyncpg

from orchestra._errors import NotFoundError, UserError
from orchestra._types import JSON, AgentId, StepKind, Task
from orchestra.store import rows as _rows
from orchestra.store.codec import Encoder, encode_message, new_id
from orchestra.store.leases import lease_lost
from orchestra.store.postgres.tasks import TASK_NAMES
from orchestra.store.protocol import ClaimSpec, Lease, StepResult, Writes
from orchestra.store.rules import already_completed, check_new_task
from orchestra.store.versions import served

__all__ = ["end_step", "start_step"]

_STEP = f"SELECT * FROM orchestra_step({', '.join(f'${i}' for i in range(1, 37))})"
_START = "SELECT orchestra_start_step($1, $2, $3, $4, $5, $6, $7, $8)"


def _task(row: asyncpg.Record) -> Task:
    return _rows.task(tuple(row[name] for name in TASK_NAMES))


def _raise(exc: asyncpg.PostgresError, task_id: str, lease: Lease, step: int,
           name: str, retry: int) -> None:
    """The general path's exception for the function's own SQLSTATEs (else ``exc``)."""
    code = getattr(exc, "sqlstate", None)
    if code == "OR001":
        role, status, owner, attempt = json.loads(getattr(exc, "detail", "") or "[]")
        raise lease_lost(task_id, role, status, owner, attempt, lease) from None
    if code == "OR002":
        raise NotFoundError(f"task {task_id!r} does not exist") from None
    if code == "OR003":
        raise already_completed(task_id, retry, step, name) from None
    raise exc


async def end_step(c: asyncpg.Connection, enc: Encoder, result: StepResult, lease: Lease,
                   agent_id: str, writes: Writes | None, *, finish: JSON = None,
                   claim: ClaimSpec | None = None, done: bool = False) -> list[Task]:
    """Commit ``result`` with ``writes``; ``done``: also end its task with ``finish`` as
    the result and claim ``claim``'s next work.
    Returns the finished task then the claimed ones (nothing when not ``done``)."""
    task_id = result.task_id
    if not agent_id:
        raise UserError("agent_id must be a non-empty string")
    agent_role = AgentId.parse(agent_id).role
    msgs: list[list[Any]] = [[], [], [], [], []]
    for m in writes.messages if writes is not None else ():
        content, calls = encode_message(enc, m, f"message of {agent_id}")
        for column, value in zip(msgs, (m.role, content, calls, m.tool_call_id, m.name),
                                 strict=True):
            column.append(value)
    hand: list[list[Any]] = [[], [], [], [], [], [], []]
    for h in writes.handoffs if writes is not None else ():
        check_new_task(h.to_role, h.max_attempts)
        note = enc.text(h.note, f"handoff note to {h.to_role!r}")
        payload = enc.json(h.payload, f"handoff payload to {h.to_role!r}")
        handoff_id, new_task = new_id(), new_id()
        event = enc.json({"handoff": handoff_id, "from": agent_id, "to_role": h.to_role,
                          "task": new_task}, "event 'handoff.posted' data")
        for column, item in zip(hand, (handoff_id, new_task, h.to_role, payload,
                                       h.max_attempts, note, event), strict=True):
            column.append(item)
    field = f"step {result.step} of task {task_id}"
    output = None if result.output is None else enc.json(result.output, field + " output")
    step_event = enc.json({"task": task_id, "step": result.step, "kind": result.kind,
                           "name": result.name, "tokens_in": result.tokens_in,
                           "tokens_out": result.tokens_out}, "event 'step.completed' data")
    result_text = enc.json(finish, f"result of task {task_id}") if done else None
    roles, caps = _capacity(claim)
    try:
        rows = await c.fetch(
            _STEP, task_id, lease.owner, lease.attempt, agent_id, agent_role, result.retry,
            result.step, result.kind, result.name, result.input_digest, output,
            result.tokens_in, result.tokens_out, float(result.cost), step_event, *msgs,
            *hand, done, result_text,
            None if claim is None else claim.owner, roles, caps,
            None if claim is None else claim.limit, None if claim is None else claim.run_id,
            None if claim is None else float(claim.lease_seconds),
            None if claim is None else served(claim.versions))
    except asyncpg.PostgresError as exc:
        _raise(exc, task_id, lease, result.step, result.name, result.retry)
        raise  # pragma: no cover (``_raise`` always raises)
    return [_task(r) for r in rows]


def _capacity(claim: ClaimSpec | None) -> tuple[list[str] | None, list[int] | None]:
    if claim is None:
        return None, None
    free = sorted((role, n) for role, n in claim.capacity.items() if n > 0)
    if free and not claim.owner:
        raise UserError("claim_task needs a non-empty owner")
    return [r for r, _ in free], [n for _, n in free]


async def start_step(c: asyncpg.Connection, task_id: str, retry: int, step: int,
                     kind: StepKind, name: str, input_digest: str, lease: Lease) -> None:
    """Journal that a step is about to run (a restarted step counts one more attempt)."""
    try:
        await c.fetchval(_START, task_id, lease.owner, lease.attempt, retry, step, kind, name,
                         input_digest)
    except asyncpg.PostgresError as exc:
        _raise(exc, task_id, lease, step, name, retry)

