"""A task's end as one appended record: one statement that SQLite projects itself.

The common end of a task is its last model step plus the messages it appended and
the handoffs it routed (the next tasks), handed in while the worker claims its next
work. Written the general way (``journal.complete_task``) that is about twenty
statements, each a round of Python, binding and the GIL on the store's thread. Here
it is ONE ``INSERT INTO step_records``: a view whose ``INSTEAD OF`` trigger
(``schema.sql``) maintains every table the change touches (agents, messages, steps,
the handoffs' tasks, the task's end, the event log and the run's totals) in the same
transaction, inside SQLite, with the GIL released for the whole projection. Nothing
else is stored: the record is the statement, and the tables are what reads use.

Python still decides everything a write must decide (each payload's encoding, size
limit and redaction, the message seqs, the reply stored once, which new tasks the
worker takes, each event's data), so the rows are exactly those of the general path;
``tests/store/test_step_record.py`` checks both write the same rows. What it decides
from (the lease, the task's run, the run's pending work, the agent's last seq) the
trigger checks, refusing a stale record whole: so when this process already knows
them (``known``) the record is a row (:func:`record_row`), and the writer inserts a
batch's rows with one statement, no ``BEGIN``/``COMMIT`` around it (``writer``): one
hop to aiosqlite's thread per batch of steps.
Ends with anything else (plans, notes, compactions, keyed handoffs, a run with older
pending work to claim first) take the general path: ``rules.fits`` says which.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from orchestra._errors import UserError
from orchestra._types import JSON, AgentId, Task
from orchestra.store import codec as _codec
from orchestra.store.codec import Encoder, encode_message
from orchestra.store.leases import lease_info
from orchestra.store.protocol import ClaimSpec, Lease, StepResult, Writes
from orchestra.store.rules import already_completed, check_new_task
from orchestra.store.sqlite.journal import _dedupe_reply, _is_last_reply
from orchestra.store.sqlite.known import Before, Known
from orchestra.store.sqlite.txn import Claimer, NeedsTransaction, Txn
from orchestra.store.sqlite.writer import Row
from orchestra.store.versions import covers

# What the write must know before it decides, in one statement (each one is a hop to
# aiosqlite's thread): the lease (``leases.LEASE_COLUMNS``), whether the run has
# pending work (?2: only for a claim), the agent's last message seq (?3: only when
# messages are appended) and the run's version (whether the claim may take its tasks).
# A subquery in a CASE branch not taken is not run.
_BEFORE = """
SELECT run_id, role, status, lease_owner, attempt, retries, max_attempts,
    CASE WHEN ?2 THEN EXISTS (SELECT 1 FROM tasks p WHERE p.run_id = t.run_id
                              AND p.status = 'pending') ELSE 0 END,
    CASE WHEN ?3 IS NULL THEN 0
         ELSE (SELECT COALESCE(MAX(seq), 0) FROM messages WHERE agent_id = ?3) END,
    (SELECT version FROM runs WHERE id = t.run_id)
FROM tasks t WHERE id = ?1"""
_INSERT = (
    "INSERT INTO step_records (run_id, task_id, agent_id, agent_role, retry, step, kind, "
    "name, input_digest, output, tokens_in, tokens_out, cost, result, result_is_reply, "
    "reply_seq, messages, tasks, events, at, lease_owner, lease_attempt, claims) VALUES"
)
_APPEND = _INSERT + " (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
_ALREADY_COMPLETED = "orchestra: step already completed"
_STALE = "orchestra: step record is stale"  # what the write assumed no longer holds


async def complete_and_claim(tx: Txn, known: Known, task_id: str, lease: Lease, result: JSON,
                             agent_id: str, writes: Writes | None, step: StepResult,
                             claim: ClaimSpec | None) -> list[Task] | None:
    """Hand in the task as one record and return the tasks it claimed for ``claim``;
    None (nothing written) when the general path must do it: the run has older pending
    work for the claim to take first, or a text holds a NUL character (SQLite's JSON
    functions would cut it there; the general path binds it whole).

    What the record must know first (the task's run and role, the agent's last message
    seq) comes from ``known`` when this process knows it: the record alone is then the
    whole write, and its trigger checks what it assumed (and the lease). Otherwise, or
    when the trigger finds it stale, one read (``_BEFORE``) learns it. The handoffs'
    tasks are claimed only if the run is on a version ``claim`` serves: known when this
    process claimed the task under the same versions (a run's version does not change
    while a lease in it is held, and the trigger checks the lease), else read.
    """
    if writes is not None and _has_nul(writes):
        return None
    appends = writes is not None and bool(writes.messages)
    before = known.before(task_id, agent_id, appends)
    versions = None if claim is None else claim.versions
    if before is not None and not covers(before.served, versions):
        before = None  # the run's version decides what the claim may take: read it
    take = claim  # None once the run is on a version the claim does not serve
    for _ in range(2):
        if before is None:
            row = (await tx.execute(_BEFORE, (task_id, claim is not None,
                                              agent_id if appends else None))).fetchone()
            info = lease_info(task_id, lease, row)
            before = Before(info.run_id, info.role, row[8], frozenset((row[9],)))
            take = claim if covers(before.served, versions) else None
            if row[7] and take is not None:  # the run's pending work: the claim's first
                return None
            known.learn(task_id, before, agent_id if appends else None)
        params, claimed, last_seq = _record(tx.enc, tx.now, task_id, lease, result, agent_id,
                                            writes, step, take, before)
        try:
            await tx.execute(_APPEND, params)
        except sqlite3.IntegrityError as exc:
            if str(exc) == _ALREADY_COMPLETED:
                raise already_completed(task_id, step.retry, step.step, step.name) from exc
            if str(exc) != _STALE:
                raise
            known.forget(task_id, agent_id)
            before = None
            continue
        known.ended(task_id)
        known.claimed(claimed, before.served)
        if appends:
            known.appended(agent_id, last_seq)
        return claimed
    # read and record were two transactions (see ``NeedsTransaction``) and the task or
    # the agent changed in between: in one transaction that cannot happen
    raise NeedsTransaction(f"task {task_id} changed between its read and its record")


def record_row(enc: Encoder, now: float, known: Known, task_id: str, lease: Lease,
               result: JSON, agent_id: str, writes: Writes | None, step: StepResult,
               claim: ClaimSpec | None) -> Row | None:
    """The task's end as a row the writer inserts with other writes' rows (one statement
    for a whole batch), when this process knows what the record assumes; else None (the
    write runs as :func:`complete_and_claim`). The row's result is the claimed tasks."""
    if writes is not None and _has_nul(writes):
        return None
    appends = writes is not None and bool(writes.messages)
    before = known.before(task_id, agent_id, appends)
    if before is None or not covers(before.served, None if claim is None else claim.versions):
        return None
    params, claimed, last_seq = _record(enc, now, task_id, lease, result, agent_id, writes,
                                        step, claim, before)

    def done() -> list[Task]:
        known.ended(task_id)
        known.claimed(claimed, before.served)
        if appends:
            known.appended(agent_id, last_seq)
        return claimed

    def refused(exc: Exception) -> None:
        if isinstance(exc, sqlite3.IntegrityError) and str(exc) == _STALE:
            known.forget(task_id, agent_id)  # the general way reads what it must first

    return Row(_INSERT, params, (task_id, agent_id), done, refused)


def _record(enc: Encoder, now: float, task_id: str, lease: Lease, result: JSON, agent_id: str,
            writes: Writes | None, step: StepResult, claim: ClaimSpec | None,
            before: Before) -> tuple[tuple[Any, ...], list[Task], int]:
    """The record's parameters, the tasks it claims and the agent's last seq after it."""
    if not agent_id:
        raise UserError("agent_id must be a non-empty string")
    run_id = before.run_id
    agent_role = AgentId.parse(agent_id).role
    messages = writes.messages if writes is not None else []
    last_seq = 0
    rows: list[list[JSON]] = []
    if messages:
        last_seq = before.last_seq
        for m in messages:
            last_seq += 1
            content, calls = encode_message(enc, m, f"message {last_seq} of {agent_id}")
            rows.append([content, m.role, calls, m.tool_call_id, m.name])
    events: list[list[str]] = []
    tasks, claimed = _handoff_tasks(enc, now, run_id, agent_id, task_id, writes, claim, events)
    field = f"step {step.step} of task {task_id}"
    stored = step.output
    if writes:
        stored = _dedupe_reply(stored, writes, agent_id, last_seq)
    output = None if stored is None else enc.json(stored, field + " output")
    _event(enc, events, "step.completed",
           {"task": task_id, "step": step.step, "kind": step.kind, "name": step.name,
            "tokens_in": step.tokens_in, "tokens_out": step.tokens_out})
    _event(enc, events, "task.completed", {"task": task_id, "role": before.role})
    result_text: str | None = enc.json(result, f"result of task {task_id}")
    from_reply = bool(writes) and last_seq > 0 and _is_last_reply(result, writes)  # type: ignore[arg-type]
    if from_reply:
        result_text = None
    for task in claimed:
        _event(enc, events, "task.claimed", {"task": task.id, "role": task.role,
                                             "attempt": task.attempt, "owner": task.lease_owner})
    params = (run_id, task_id, agent_id, agent_role, step.retry, step.step, step.kind,
              step.name, step.input_digest, output, step.tokens_in, step.tokens_out, step.cost,
              result_text, int(from_reply), last_seq, _codec.compact(rows),
              _codec.compact(tasks), _codec.compact(events), now, lease.owner, lease.attempt,
              claim is not None)
    return params, claimed, last_seq


def _handoff_tasks(enc: Encoder, now: float, run_id: str, agent_id: str, task_id: str,
                   writes: Writes | None, claim: ClaimSpec | None, events: list[list[str]]
                   ) -> tuple[list[list[JSON]], list[Task]]:
    """The rows of the tasks the handoffs create (claimed while ``claim`` has room, as
    ``tasks.Claimer`` does), their ``handoff.posted`` events, and the claimed tasks."""
    if writes is None or not writes.handoffs:
        return [], []
    claimer = None if claim is None else Claimer(claim.owner, dict(claim.capacity),
                                                 claim.limit, claim.lease_seconds)
    rows: list[list[JSON]] = []
    claimed: list[Task] = []
    for handoff in writes.handoffs:
        role = handoff.to_role
        handoff_id = _codec.new_id()
        note = enc.text(handoff.note, f"handoff note to {role!r}")
        check_new_task(role, handoff.max_attempts)
        new_task = _codec.new_id()
        cause = f"handoff:{handoff_id}"
        payload = enc.json(handoff.payload, f"handoff payload to {role!r}")
        owner: str | None = None
        attempt, lease_ends = 0, None
        if claimer is not None and claimer.take(role, 0.0, now):
            owner, attempt, lease_ends = claimer.owner, 1, now + claimer.lease_seconds
        status = "pending" if owner is None else "running"
        rows.append([new_task, role, payload, status, attempt, owner, lease_ends,
                     handoff.max_attempts, cause, note])
        _event(enc, events, "handoff.posted", {"handoff": handoff_id, "from": agent_id,
                                               "to_role": role, "task": new_task})
        if owner is not None:
            claimed.append(Task(new_task, run_id, role, handoff.payload, "running",
                                attempt=1, max_attempts=handoff.max_attempts,
                                lease_owner=owner, lease_expires_at=lease_ends,
                                parent_id=task_id, cause=cause, created_at=now,
                                updated_at=now))
    return rows, claimed


def _has_nul(writes: Writes) -> bool:
    """Whether a text the record carries raw (not JSON-encoded) holds a NUL."""
    return any("\x00" in m.content or "\x00" in (m.name or "") or "\x00" in (m.tool_call_id or "")
               for m in writes.messages) or any("\x00" in h.note for h in writes.handoffs)


def _event(enc: Encoder, events: list[list[str]], kind: str, data: JSON) -> None:
    events.append([kind, enc.json(data, f"event {kind!r} data")])
