"""The event log: the write every state change ends with.

``seq`` is gap-free per run because it is taken from ``runs.last_seq`` inside the
transaction that makes the change: a rolled-back change takes its seq with it.

A hot write that reports several changes at once (a task's end: its step, its
handoff, its completion, the next claim) wraps its work in :func:`batched_events`:
the first event of a run reads its ``last_seq`` (which also proves the run exists;
the transaction holds the write lock, so nobody else can take a seq meanwhile), later
ones count on from it in memory, and on leaving the block one ``UPDATE`` stores the
run's new ``last_seq`` and totals and one ``executemany`` inserts the rows. Same rows,
same seqs, a third of the statements, and the run's row is written once. The open
batch is the transaction object's ``events``: nothing is kept beside it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from orchestra._errors import NotFoundError
from orchestra._types import JSON, Event
from orchestra.store.sqlite.txn import EventBatch, RunTally, Txn

_NEXT_SEQ = (
    "UPDATE runs SET last_seq = last_seq + 1, updated_at = ?1 WHERE id = ?2 RETURNING last_seq"
)
_NEXT_SEQ_WITH_TOTALS = (
    "UPDATE runs SET last_seq = last_seq + 1, updated_at = ?1, tokens_in = tokens_in + ?3, "
    "tokens_out = tokens_out + ?4, cost = cost + ?5, steps = steps + 1 "
    "WHERE id = ?2 RETURNING last_seq"
)
_SET_SEQ_WITH_TOTALS = (
    "UPDATE runs SET last_seq = ?1, updated_at = ?2, tokens_in = tokens_in + ?3, "
    "tokens_out = tokens_out + ?4, cost = cost + ?5, steps = steps + ?6 WHERE id = ?7"
)
_INSERT_EVENT = "INSERT INTO events (run_id, seq, kind, data, at) VALUES (?, ?, ?, ?, ?)"
_RUN_EXISTS = "SELECT 1 FROM runs WHERE id = ?"
_LAST_SEQ = "SELECT last_seq FROM runs WHERE id = ?"


@asynccontextmanager
async def batched_events(tx: Txn) -> AsyncIterator[None]:
    """Defer the event rows and ``last_seq`` updates of the enclosed writes to its end.

    Nothing is flushed if the block raises: the caller's transaction (or savepoint)
    rolls back the seqs it reserved. Nested use joins the outer batch.
    """
    if tx.events is not None:
        yield
        return
    batch = tx.events = EventBatch()
    try:
        yield
    finally:
        tx.events = None
    for run_id, tally in batch.runs.items():
        if tally.seq == tally.first and not tally.steps:
            continue  # only read (to check the run exists): nothing to write back
        await tx.execute(_SET_SEQ_WITH_TOTALS, (tally.seq, tx.now, tally.tokens_in,
                                                tally.tokens_out, tally.cost, tally.steps, run_id))
    if batch.rows:
        await tx.executemany(_INSERT_EVENT, batch.rows)


def new_run(tx: Txn, run_id: str) -> RunTally:
    """Inside :func:`batched_events`: ``run_id`` was just inserted by this write (its
    ``last_seq`` is 0), so its events count from 1 without reading its row. Returns the
    run's tally (its ``seq`` is the run's last seq once the write's events are added)."""
    if tx.events is None:
        raise RuntimeError("new_run needs an open batched_events block")
    tally = tx.events.runs[run_id] = RunTally(0)
    return tally


async def insert_event(tx: Txn, run_id: str, seq: int, kind: str, data: JSON) -> Event:
    """Insert an event whose ``seq`` the caller took from the run's row itself, in the
    statement that changed the row (``last_seq = last_seq + 1 ... RETURNING``)."""
    return await _insert(tx, run_id, kind, data, (seq,))


async def require_run(tx: Txn, run_id: str) -> None:
    """``NotFoundError`` unless the run exists. Inside a batch the check is the read of
    the run's ``last_seq`` its events will need anyway (one statement, not two)."""
    if tx.events is not None:
        await _tally(tx, tx.events, run_id)
        return
    if (await tx.execute(_RUN_EXISTS, (run_id,))).fetchone() is None:
        raise NotFoundError(f"run {run_id!r} does not exist")


async def append_event(tx: Txn, run_id: str, kind: str, data: JSON) -> Event:
    """Append one event to ``run_id``'s log; ``NotFoundError`` if the run does not exist."""
    if tx.events is not None:
        return _add(tx, tx.events, run_id, (await _next_seq(tx, tx.events, run_id)).seq, kind, data)
    row = (await tx.execute(_NEXT_SEQ, (tx.now, run_id))).fetchone()
    return await _insert(tx, run_id, kind, data, row)


async def append_step_event(tx: Txn, run_id: str, kind: str, data: JSON, *, tokens_in: int,
                      tokens_out: int, cost: float) -> Event:
    """Append a step's event and add the step to the run's totals in one statement."""
    if tx.events is not None:
        tally = await _next_seq(tx, tx.events, run_id)
        tally.tokens_in += tokens_in
        tally.tokens_out += tokens_out
        tally.cost += cost
        tally.steps += 1
        return _add(tx, tx.events, run_id, tally.seq, kind, data)
    row = (await tx.execute(_NEXT_SEQ_WITH_TOTALS,
                     (tx.now, run_id, tokens_in, tokens_out, cost))).fetchone()
    return await _insert(tx, run_id, kind, data, row)


async def _tally(tx: Txn, batch: EventBatch, run_id: str) -> RunTally:
    """The run's tally in the batch; the first use of a run reads its ``last_seq``."""
    tally = batch.runs.get(run_id)
    if tally is None:
        row = (await tx.execute(_LAST_SEQ, (run_id,))).fetchone()
        if row is None:
            raise NotFoundError(f"run {run_id!r} does not exist")
        tally = batch.runs[run_id] = RunTally(row[0])
    return tally


async def _next_seq(tx: Txn, batch: EventBatch, run_id: str) -> RunTally:
    """The run's tally with its next seq taken."""
    tally = await _tally(tx, batch, run_id)
    tally.seq += 1
    return tally


async def _insert(tx: Txn, run_id: str, kind: str, data: JSON, row: tuple[int] | None) -> Event:
    if row is None:
        raise NotFoundError(f"run {run_id!r} does not exist")
    (await tx.execute(_INSERT_EVENT, (run_id, row[0], kind,
                               tx.enc.json(data, f"event {kind!r} data"), tx.now)))
    return Event(run_id, row[0], kind, data, tx.now)


def _add(tx: Txn, batch: EventBatch, run_id: str, seq: int, kind: str, data: JSON) -> Event:
    batch.rows.append((run_id, seq, kind, tx.enc.json(data, f"event {kind!r} data"), tx.now))
    return Event(run_id, seq, kind, data, tx.now)
