"""A worker's lease on its task, checked the same way on both backends.

``attempt`` is the fencing token: a claim bumps it, and every write a worker makes
under its lease compares the task's ``(status, lease_owner, attempt)`` with the
lease in the same transaction. Each backend reads the row its own way (SQLite in
one statement with what else its write needs, PostgreSQL ``FOR UPDATE``); the
verdict and the error are decided here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from orchestra._errors import LeaseLostError, NotFoundError
from orchestra.store.protocol import Lease

LEASE_COLUMNS = "run_id, role, status, lease_owner, attempt, retries, max_attempts"
"""What :func:`lease_info` reads from a task's row, in this order (first in the row)."""


@dataclass(frozen=True, slots=True)
class LeaseInfo:
    """What a fenced write needs to know about its task."""

    task_id: str
    run_id: str
    role: str
    retries: int
    max_attempts: int


def lease_info(task_id: str, lease: Lease, row: Sequence[Any] | None) -> LeaseInfo:
    """``LeaseLostError`` unless ``lease`` still holds ``task_id``, read off the task's row
    (:data:`LEASE_COLUMNS` first; None: no such task, ``NotFoundError``)."""
    if row is None:
        raise NotFoundError(f"task {task_id!r} does not exist")
    run_id, role, status, owner, attempt, retries, max_attempts = row[:7]
    if status != "running" or owner != lease.owner or attempt != lease.attempt:
        raise lease_lost(task_id, role, status, owner, attempt, lease)
    return LeaseInfo(task_id, run_id, role, retries, max_attempts)


def lease_lost(task_id: str, role: str, status: str, owner: str | None, attempt: int,
               lease: Lease) -> LeaseLostError:
    """The error for a write under ``lease`` to a task that is no longer its holder's."""
    return LeaseLostError(
        f"task {task_id} ({role}): lease lost: the task is {status}, held by "
        f"{owner!r} at attempt {attempt}, but this write came from {lease.owner!r} at "
        f"attempt {lease.attempt}. Stop working on it; another worker owns it now."
    )
