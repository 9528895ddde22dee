"""A step's start, and a step's end that writes nothing else, as one row each.

A tool step is journaled twice: ``started`` (durably, before the tool acts: a crash from
then on finds it in flight) and then its outcome. The general way
(``journal.start_step``, ``journal.complete_step``) is a transaction of four and six
statements, every one a hop to aiosqlite's thread and back. Here each is ONE insert into
a view (``step_starts``, ``step_ends``; schema v10) whose trigger checks the lease and
maintains ``steps``, ``agents``, the run's totals and its event log inside SQLite; the
writer inserts a batch's rows with one statement (``writer.run_rows``), its own
transaction, as durable as any commit.

Python still decides what a write decides (each payload's encoding, size limit and
redaction, every event's data), so the rows are those of the general path
(``tests/store/test_step_rows.py``). A row needs the task's run, which this process
knows when it claimed the task (``known``); when it does not, when the writes of the
step's end hold more than its output (messages, handoffs, notes), or when the trigger
refuses the row (the lease was lost, the step already completed), the write goes the
general way, which says why.
"""

from __future__ import annotations

import sqlite3

from orchestra._errors import UserError
from orchestra._types import AgentId, StepKind
from orchestra.store.codec import Encoder
from orchestra.store.protocol import Lease, StepResult, Writes
from orchestra.store.rules import check_kind
from orchestra.store.sqlite.known import Known
from orchestra.store.sqlite.writer import Row

_START = ("INSERT INTO step_starts (run_id, task_id, retry, step, kind, name, input_digest, "
          "event, at, lease_owner, lease_attempt) VALUES")
_END = ("INSERT INTO step_ends (run_id, task_id, agent_id, agent_role, retry, step, kind, "
        "name, input_digest, status, output, error, tokens_in, tokens_out, cost, event, at, "
        "lease_owner, lease_attempt) VALUES")
_STALE = "orchestra: step record is stale"  # the trigger's word for a lost lease


def start_row(enc: Encoder, now: float, known: Known, task_id: str, retry: int, step: int,
              kind: StepKind, name: str, input_digest: str, lease: Lease) -> Row | None:
    """``journal.start_step`` as a row, when this process knows the task's run."""
    check_kind(kind)
    before = known.before(task_id, "", False)
    if before is None:
        return None
    # a model call's start has no event (frequent, and effect-free); the trigger appends
    # the ``attempt`` the upsert counted as the data's last key
    event = None if kind == "model" else enc.json(
        {"task": task_id, "step": step, "kind": kind, "name": name},
        "event 'step.started' data")
    return Row(_START, (before.run_id, task_id, retry, step, kind, name, input_digest, event,
                        now, lease.owner, lease.attempt), (task_id,), _nothing,
               lambda exc: _refused(known, task_id, exc))


def end_row(enc: Encoder, now: float, known: Known, result: StepResult, lease: Lease,
            agent_id: str, writes: Writes | None) -> Row | None:
    """``journal.complete_step`` as a row, when the step writes nothing but its outcome
    and this process knows the task's run."""
    if writes:  # messages, handoffs, notes...: the general way applies them
        return None
    check_kind(result.kind)
    if not agent_id:
        raise UserError("agent_id must be a non-empty string")
    before = known.before(result.task_id, agent_id, False)
    if before is None:
        return None
    status = "completed" if result.error is None else "failed"
    field = f"step {result.step} of task {result.task_id}"
    output = None if result.output is None else enc.json(result.output, field + " output")
    error = enc.optional_text(result.error, field + " error")
    event = enc.json({"task": result.task_id, "step": result.step, "kind": result.kind,
                      "name": result.name, "tokens_in": result.tokens_in,
                      "tokens_out": result.tokens_out}, f"event 'step.{status}' data")
    return Row(_END, (before.run_id, result.task_id, agent_id, AgentId.parse(agent_id).role,
                      result.retry, result.step, result.kind, result.name,
                      result.input_digest, status, output, error, result.tokens_in,
                      result.tokens_out, result.cost, event, now, lease.owner, lease.attempt),
               (result.task_id,), _nothing, lambda exc: _refused(known, result.task_id, exc))


def _nothing() -> None:
    return None


def _refused(known: Known, task_id: str, exc: Exception) -> None:
    if isinstance(exc, sqlite3.IntegrityError) and str(exc) == _STALE:
        known.ended(task_id)  # the general way reads the lease, and says it was lost
