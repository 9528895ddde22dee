"""SQLite's SQL for the shared facade (``store/facade*.py``): its modules by concern, and
the SQL written once (``approvals``) on SQLite's dialect, event log and lease check."""

from __future__ import annotations

from orchestra.store import dialect
from orchestra.store.approvals import Approvals
from orchestra.store.backend import Backend
from orchestra.store.sqlite import (
    board,
    board_reads,
    events,
    fork,
    journal,
    reads,
    retention,
    runs,
    servers,
    tasks,
    versions,
)
from orchestra.store.sqlite.txn import Conn, Txn

SQLITE: Backend[Txn, Conn] = Backend(
    events=events, board=board,
    approvals=Approvals(dialect.SQLITE, events.append_event, tasks.check_lease),
    runs=runs, tasks=tasks, journal=journal, fork=fork, versions=versions, retention=retention,
    servers=servers,
    board_reads=board_reads, reads=reads)
