"""The event log on PostgreSQL: the write every state change ends with.

``seq`` is gap-free per run because it is taken from ``runs.last_seq`` by an
``UPDATE`` in the transaction that makes the change: the run's row stays locked
until that transaction ends, so writers on any host take seqs one after another,
and a rolled-back change takes its seq with it. The insert fires the trigger that
notifies followers (``LISTEN orchestra_events``) at commit.
"""

from __future__ import annotations

from typing import Any

import asyncpg

from orchestra._errors import NotFoundError, StoreError
from orchestra._types import JSON, Event
from orchestra.store.postgres.txn import Txn

# the seq taken and the event inserted in one statement (one round trip, not two): the
# UPDATE locks the run's row for the rest of the transaction, as before
_SET_SEQ = "UPDATE runs SET last_seq = last_seq + 1, updated_at = $1"
_SET_TOTALS = (", tokens_in = tokens_in + $5, tokens_out = tokens_out + $6, cost = cost + $7, "
               "steps = steps + 1")
_APPEND = ("WITH s AS ({set} WHERE id = $2 RETURNING last_seq) "
           "INSERT INTO events (run_id, seq, kind, data, at) "
           "SELECT $2, last_seq, $3, $4, $1 FROM s RETURNING seq")
_NEXT_SEQ = _APPEND.format(set=_SET_SEQ)
_NEXT_SEQ_WITH_TOTALS = _APPEND.format(set=_SET_SEQ + _SET_TOTALS)
_RUN_EXISTS = "SELECT 1 FROM runs WHERE id = $1"


def whole(row: asyncpg.Record | None) -> tuple[Any, ...]:
    """A row a statement of this transaction must have returned (it locked or wrote it)."""
    if row is None:
        raise StoreError("a row this transaction holds is missing; the database was changed "
                         "outside orchestra")
    return tuple(row)


async def require_run(tx: Txn, run_id: str) -> None:
    if await tx.fetchval(_RUN_EXISTS, run_id) is None:
        raise NotFoundError(f"run {run_id!r} does not exist")


async def append_event(tx: Txn, run_id: str, kind: str, data: JSON) -> Event:
    """Append one event to ``run_id``'s log; ``NotFoundError`` if the run does not exist."""
    text = tx.enc.json(data, f"event {kind!r} data")  # before the seq: a bad payload takes none
    seq = await tx.fetchval(_NEXT_SEQ, tx.now, run_id, kind, text)
    return _event(run_id, seq, kind, data, tx.now)


async def append_step_event(tx: Txn, run_id: str, kind: str, data: JSON, *, tokens_in: int,
                            tokens_out: int, cost: float) -> Event:
    """Append a step's event and add the step to the run's totals in one statement."""
    text = tx.enc.json(data, f"event {kind!r} data")
    seq = await tx.fetchval(_NEXT_SEQ_WITH_TOTALS, tx.now, run_id, kind, text, tokens_in,
                            tokens_out, float(cost))
    return _event(run_id, seq, kind, data, tx.now)


def _event(run_id: str, seq: int | None, kind: str, data: JSON, now: float) -> Event:
    if seq is None:
        raise NotFoundError(f"run {run_id!r} does not exist")
    return Event(run_id, seq, kind, data, now)
