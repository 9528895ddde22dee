"""The keys a step is known by across crashes, defined once for every step kind."""

from __future__ import annotations

import hashlib

from orchestra._types import Task


def digest(text: str) -> str:
    """A short, stable fingerprint of a step's input (journaled as ``input_digest``)."""
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def idempotency_key(task: Task, step: int) -> str:
    """The same for every execution of one step of one task attempt: tools pass it to
    outside systems so a step re-run after a crash does not act twice."""
    return f"{task.run_id}:{task.id}:{task.retries}:{step}"
