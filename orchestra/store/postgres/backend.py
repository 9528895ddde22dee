"""PostgreSQL's SQL for the shared facade (``store/facade*.py``): its modules by concern,
and the SQL written once (``approvals``) on PostgreSQL's dialect, event log and lease check."""

from __future__ import annotations

import asyncpg

from orchestra.store import dialect
from orchestra.store.approvals import Approvals
from orchestra.store.backend import Backend
from orchestra.store.postgres import (
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
from orchestra.store.postgres.txn import Txn

POSTGRES: Backend[Txn, asyncpg.Connection] = Backend(
    events=events, board=board,
    approvals=Approvals(dialect.POSTGRES, events.append_event, tasks.check_lease),
    runs=runs, tasks=tasks, journal=journal, fork=fork, versions=versions, retention=retention,
    servers=servers,
    board_reads=board_reads, reads=reads)
