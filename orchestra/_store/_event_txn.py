"""The event log: the write every state change ends with.

``seq`` is gap-free per run because it is taken with ``UPDATE runs SET last_seq =
last_seq + 1 ... RETURNING`` inside the transaction that makes the change: a
rolled-back change takes its seq with it.
"""

from __future__ import annotations

import sqlite3

from orchestra._errors import NotFoundError
from orchestra._store._codec import Encoder
from orchestra._types import JSON, Event

_NEXT_SEQ = (
    "UPDATE runs SET last_seq = last_seq + 1, updated_at = ?1 WHERE id = ?2 RETURNING last_seq"
)
_NEXT_SEQ_WITH_TOTALS = (
    "UPDATE runs SET last_seq = last_seq + 1, updated_at = ?1, tokens_in = tokens_in + ?3, "
    "tokens_out = tokens_out + ?4, cost = cost + ?5, steps = steps + 1 "
    "WHERE id = ?2 RETURNING last_seq"
)
_INSERT_EVENT = "INSERT INTO events (run_id, seq, kind, data, at) VALUES (?, ?, ?, ?, ?)"
_RUN_EXISTS = "SELECT 1 FROM runs WHERE id = ?"


def require_run(conn: sqlite3.Connection, run_id: str) -> None:
    if conn.execute(_RUN_EXISTS, (run_id,)).fetchone() is None:
        raise NotFoundError(f"run {run_id!r} does not exist")


def append_event(conn: sqlite3.Connection, enc: Encoder, run_id: str, kind: str, data: JSON,
                 now: float) -> Event:
    """Append one event to ``run_id``'s log; ``NotFoundError`` if the run does not exist."""
    row = conn.execute(_NEXT_SEQ, (now, run_id)).fetchone()
    return _insert(conn, enc, run_id, kind, data, now, row)


def append_step_event(conn: sqlite3.Connection, enc: Encoder, run_id: str, kind: str,
                      data: JSON, now: float, *, tokens_in: int, tokens_out: int,
                      cost: float) -> Event:
    """Append a step's event and add the step to the run's totals in one statement."""
    row = conn.execute(_NEXT_SEQ_WITH_TOTALS,
                       (now, run_id, tokens_in, tokens_out, cost)).fetchone()
    return _insert(conn, enc, run_id, kind, data, now, row)


def _insert(conn: sqlite3.Connection, enc: Encoder, run_id: str, kind: str, data: JSON,
            now: float, row: tuple[int] | None) -> Event:
    if row is None:
        raise NotFoundError(f"run {run_id!r} does not exist")
    conn.execute(_INSERT_EVENT, (run_id, row[0], kind, enc.json(data, f"event {kind!r} data"), now))
    return Event(run_id, row[0], kind, data, now)
