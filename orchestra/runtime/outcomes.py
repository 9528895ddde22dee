"""How a task attempt ended, as data the runtime hands back to its caller.

The runtime decides (it runs the turns and knows what the task produced); the
coordinator acts: it routes a completed task's output, commits the task's end together
with the next claim in one transaction, or records a failure. Nothing crosses the
layers as a dict read by string keys: each end is one frozen variant, told apart by
``kind`` (or ``isinstance``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from orchestra._types import JSON, Message
from orchestra.roles import Patched
from orchestra.store.protocol import StepResult, Writes


@dataclass(frozen=True, slots=True)
class Counts:
    """What one attempt did: steps replayed from the journal, steps run, and the tokens
    and cost of the model calls it made in this process."""

    steps_replayed: int = 0
    steps_executed: int = 0
    tokens: int = 0
    cost: float = 0.0


@dataclass(frozen=True, slots=True)
class Completed:
    """The task has its answer; nothing of its end is committed yet.

    The caller commits ``result``, ``writes`` and ``step`` in ONE transaction with the
    task's completion (the journal's invariant: the last model step, the messages
    pending since the last commit, and the postings routed from ``output`` are stored
    together or not at all)."""

    output: Any
    """The role's output as the role declared it (a pydantic model, a string...): what
    the pipeline's route sees."""
    result: JSON
    """``output`` as stored (JSON)."""
    writes: Writes
    """The messages not committed yet (the final model step's, then those pending); the
    route appends its postings here before the commit."""
    step: StepResult | None
    """The final model step when it is not committed yet: it commits with the task."""
    counts: Counts = Counts()
    patched: Patched | None = None
    """The task's patches (journaled with its first model step): what a route that takes
    ``patched`` is given, so it answers as the task's instructions and tools did."""
    kind: Literal["completed"] = "completed"


@dataclass(frozen=True, slots=True)
class Failed:
    """The attempt found no usable answer; its messages close with a failure marker and
    are stored with the failure (so later views skip them)."""

    error: str
    messages: tuple[Message, ...] = ()
    retry: bool = True
    """Worth another attempt (the role's ``max_attempts`` permitting)."""
    counts: Counts = Counts()
    kind: Literal["failed"] = "failed"


@dataclass(frozen=True, slots=True)
class Waiting:
    """A tool call waits for a human decision; the store parked the task already."""

    approval_id: str
    tool: str
    counts: Counts = Counts()
    kind: Literal["waiting"] = "waiting"


@dataclass(frozen=True, slots=True)
class Limited:
    """A usage cap (tokens or cost, per run or per agent) stopped the task."""

    error: str
    counts: Counts = Counts()
    kind: Literal["limited"] = "limited"


TaskOutcome = Completed | Failed | Waiting | Limited
"""How a task attempt ended (``TaskRunner.run``)."""
