"""SQLite's SQL for the shared facade (``store/facade*.py``): its modules by concern."""

from __future__ import annotations

from orchestra.store.backend import Backend
from orchestra.store.sqlite import (
    approvals,
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
)
from orchestra.store.sqlite.txn import Conn, Txn

SQLITE: Backend[Txn, Conn] = Backend(
    events=events, board=board, approvals=approvals, runs=runs, tasks=tasks, journal=journal,
    fork=fork, retention=retention, servers=servers, board_reads=board_reads, reads=reads)
