"""What both backends decide the same way, without SQL: which tasks and steps may be
created, what completing a step twice says, which ends of a task are one record, how
search words are quoted, how a prune groups its runs (a lease's check is ``leases``; a
fork's replay of the log, ``fork_replay``).

Kept apart from either backend so that ``sqlite/`` and ``postgres/`` import only
downwards, never each other."""

from __future__ import annotations

from collections.abc import Sequence

from orchestra._errors import StoreError, UserError
from orchestra._types import STEP_KINDS
from orchestra.store.protocol import StepResult, Writes

_KINDS = frozenset(STEP_KINDS)

def check_new_task(role: str, max_attempts: int) -> None:
    """``UserError`` unless a task of ``role`` with ``max_attempts`` can be created."""
    if not role:
        raise UserError("a task needs a role, got an empty string")
    if max_attempts < 1:
        raise UserError(f"task for {role!r}: max_attempts must be >= 1, got {max_attempts}")


def check_kind(kind: str) -> None:
    """``UserError`` unless ``kind`` is a step kind."""
    if kind not in _KINDS:
        raise UserError(f"step kind must be one of {sorted(_KINDS)}, got {kind!r}")


def already_completed(task_id: str, retry: int, step: int, name: str) -> StoreError:
    """The error for completing a step the journal already holds as completed."""
    return StoreError(
        f"task {task_id} retry {retry} step {step} ({name}) is already completed; its "
        "writes were not applied again. Replay its recorded output instead of completing "
        "it twice."
    )


def fits(writes: Writes | None, step: StepResult | None, task_id: str) -> bool:
    """Whether this end can be one record: a successful step of the task, and writes
    that are only messages and handoffs without a key."""
    if step is None or step.error is not None or step.task_id != task_id:
        return False
    if step.kind not in _KINDS:
        return False
    if writes is None:
        return True
    return not (writes.compactions or writes.plans or writes.notes or writes.tasks
                or writes.events or writes.entries or writes.triggers) \
        and all(h.key is None for h in writes.handoffs)


def fts_query(text: str) -> str | None:
    """Quote every word as an FTS5 string and AND them.

    User text then never parses as FTS5 syntax (``AND``, ``NEAR``, ``-``, ``*``,
    quotes), so no input raises. Words without a letter or digit are dropped:
    the tokenizer would find nothing in them. Returns None if no word is left.
    """
    words = [w for w in text.split() if any(ch.isalnum() for ch in w)]
    if not words:
        return None
    return " AND ".join('"' + w.replace('"', '""') + '"' for w in words)


def batches(runs: Sequence[tuple[str, int]], batch_rows: int) -> list[list[str]]:
    """Group runs so each group has about ``batch_rows`` events at most (a larger run is
    a group of its own, trimmed by :func:`delete_some` first)."""
    groups: list[list[str]] = []
    group: list[str] = []
    size = 0
    for run_id, events in runs:
        if group and size + events > batch_rows:
            groups.append(group)
            group, size = [], 0
        group.append(run_id)
        size += events
    if group:
        groups.append(group)
    return groups
