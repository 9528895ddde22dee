"""The keys a step is known by across crashes, defined once for every step kind."""

from __future__ import annotations

import hashlib

from orchestra._types import Task


def digest(text: str) -> str:
    """A short, stable fingerprint of a step's input (journaled as ``input_digest``).

    BLAKE2b, not SHA-256: it is computed for every model call, and Python's own BLAKE2
    costs half of OpenSSL's SHA-256 set-up on short inputs (a fingerprint, not a seal)."""
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def idempotency_key(task: Task, step: int) -> str:
    """The same for every execution of one step of one task attempt: tools pass it to
    outside systems so a step re-run after a crash does not act twice."""
    return f"{task.run_id}:{task.id}:{task.retries}:{step}"
