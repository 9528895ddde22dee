"""What a fork of a run starts from, decided the same way on both backends.

Every write commits its rows and its events with one timestamp, in seq order, so
"right after event N" is "every row written at or before event N's time", widened
to the end of N's write (a state in the middle of one commit never existed). What
the rows no longer show, each task's state at that point, is replayed here from
the run's event log; each backend reads the events and copies the rows in its own
SQL (``sqlite/fork.py``, ``postgres/fork.py``).
"""

from __future__ import annotations

from collections.abc import Iterable

from orchestra._errors import UserError
from orchestra._types import TERMINAL_RUN_STATUSES
from orchestra.store.codec import new_id

# The status a task has right after each event that changes it.
TASK_STATUS_AFTER = {"task.created": "pending", "handoff.posted": "pending",
                     "task.claimed": "running", "task.completed": "completed",
                     "task.failed": "failed", "task.retrying": "pending",
                     "task.requeued": "pending", "task.cancelled": "cancelled",
                     "task.waiting": "waiting"}
REPLAYED_KINDS = (*TASK_STATUS_AFTER, "approval.requested", "approval.decided",
                  "run.completed", "run.failed", "run.cancelled", "run.running",
                  "run.pending", "run.waiting")
"""The events the replay reads (``kind IN (...)`` of each backend's query)."""
REPLAYED_KINDS_SQL = ", ".join(f"'{kind}'" for kind in REPLAYED_KINDS)

IdRow = tuple[str, str, str | None, int, int]
"""A row of the fork's id map: (old id, new id, status, claims, retries); an approval's
row has no status."""


def fork_id_for(run_id: str, at_seq: int, last_seq: int, fork_id: str | None) -> str:
    """The fork's run id (a new one when None), once ``at_seq`` is one of ``run_id``'s
    events 1..``last_seq``; ``UserError`` naming the bad value otherwise."""
    if isinstance(at_seq, bool) or not isinstance(at_seq, int) or not 1 <= at_seq <= last_seq:
        raise UserError(f"run {run_id} has events 1..{last_seq}; {at_seq!r} is not one of "
                        "them (see `orchestra events RUN`)")
    fork_id = new_id(12) if fork_id is None else fork_id
    if not fork_id or "/" in fork_id:
        raise UserError(f"a fork's run id must be a non-empty string without '/', got "
                        f"{fork_id!r}")
    return fork_id


def fork_exists(fork_id: str) -> UserError:
    """The error for a fork id that names a run already."""
    return UserError(f"run {fork_id!r} already exists; choose another id for the fork")


def end_of_write(seq: int, at: float, following: Iterable[tuple[int, float]]) -> int:
    """The last seq committed by the same write as ``seq`` (written at ``at``), given the
    (seq, at) of the events after it in order: a write's events share ``at``."""
    for next_seq, next_at in following:
        if next_at != at or next_seq != seq + 1:
            break
        seq = next_seq
    return seq


def state_at(events: Iterable[tuple[str, str | None, object, str | None]]
             ) -> tuple[list[IdRow], str | None]:
    """Replay (kind, task id, retries, approval id) of the :data:`REPLAYED_KINDS` events up
    to the fork point, in seq order: the id map's rows for every task and approval they
    show, and the run's terminal status then (None: it was live)."""
    tasks: dict[str, tuple[str, int, int]] = {}
    approvals: list[str] = []
    run_status: str | None = None
    for kind, task_id, retries, approval in events:
        if kind.startswith("run."):
            run_status = kind[4:] if kind[4:] in TERMINAL_RUN_STATUSES else None
        elif kind == "approval.requested" and approval is not None:
            approvals.append(approval)
        elif kind in TASK_STATUS_AFTER and task_id is not None:
            _, claims, before = tasks.get(task_id, ("pending", 0, 0))
            tasks[task_id] = (TASK_STATUS_AFTER[kind], claims + (kind == "task.claimed"),
                              retries if isinstance(retries, int) else before)
    rows: list[IdRow] = [
        (old, new_id(), status if status in TERMINAL_RUN_STATUSES or status == "waiting"
         else "pending", claims, retries)  # a task at work then is to do again
        for old, (status, claims, retries) in tasks.items()]
    rows += [(old, new_id(), None, 0, 0) for old in approvals]
    return rows, run_status


def fork_status(ids: Iterable[IdRow], run_status: str | None) -> str:
    """The fork's status: the run's terminal status then if every task had ended, else
    ``pending`` (resuming it runs the rest)."""
    live = any(status not in TERMINAL_RUN_STATUSES for _, _, status, _, _ in ids
               if status is not None)
    return run_status if run_status is not None and not live else "pending"
