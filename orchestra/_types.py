"""Frozen records shared by every layer.

These are what the blackboard returns and what the runtime and coordinator pass
around. They are plain dataclasses (cheap to build on the hot path); pydantic is
used only at the boundary where data comes from a model or a user.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple, get_args

from orchestra._scopes import PUBLIC, Scope

JSON = Any
"""A value that round-trips through ``json.dumps`` / ``json.loads``."""

# The vocabulary, defined once: the Literals type the records, the tuples (derived from
# them) check values at run time and fill the schema's CHECK constraints.
TaskStatus = Literal["pending", "running", "waiting", "completed", "failed", "cancelled"]
RunStatus = Literal[TaskStatus, "paused", "stalled"]
"""A run is also ``paused``: stopped for a reason a resume can lift (:data:`PauseReason`);
or ``stalled``: its board stopped making progress (``Pipeline.stall``; ``error`` says how)."""
PauseReason = Literal["budget"]
"""Why a run is ``paused``: ``budget``, a token cap was reached: the run's
(``--max-tokens``; ``orchestra resume RUN --max-tokens N`` raises it and continues the
run) or a role's ``max_tokens_per_agent`` (raise it in the code, then resume)."""
StepKind = Literal["model", "tool", "compaction"]
StepStatus = Literal["started", "completed", "failed", "cancelled"]
ApprovalStatus = Literal["pending", "approved", "denied"]
MessageRole = Literal["system", "user", "assistant", "tool"]
Durability = Literal["normal", "full"]

RUN_STATUSES: tuple[RunStatus, ...] = get_args(RunStatus)
TASK_STATUSES: tuple[TaskStatus, ...] = get_args(TaskStatus)
STEP_KINDS: tuple[StepKind, ...] = get_args(StepKind)
STEP_STATUSES: tuple[StepStatus, ...] = get_args(StepStatus)
APPROVAL_STATUSES: tuple[ApprovalStatus, ...] = get_args(ApprovalStatus)
MESSAGE_ROLES: tuple[MessageRole, ...] = get_args(MessageRole)
LIVE_RUN_STATUSES: tuple[RunStatus, ...] = ("pending", "running", "waiting")
"""Runs workers serve (``runs --active``); the others stay as they are until someone acts:
a ``failed`` or ``paused`` run continues only when resumed."""
TERMINAL_RUN_STATUSES: frozenset[str] = frozenset(RUN_STATUSES) - frozenset(LIVE_RUN_STATUSES)
DELTA_EVENT = "model.delta"
"""The kind of the events that carry a model call's answer while it is written
(``runtime.deltas``); a prune folds a completed call's into its step (``store.folding``)."""

DEFAULT_CONCURRENCY = 16
"""Tasks one coordinator runs at once unless told otherwise (``CoordinatorSettings``,
``--concurrency`` of run, resume, worker and serve): the one place this default lives."""
DEFAULT_ROLE_CONCURRENCY = 4
"""Tasks of one role that may run at once unless the role says otherwise (``Role``)."""


def run_finished_after(event_kind: str, finished: bool) -> bool:
    """Is a run finished after an event of this kind (``finished``: was it before)?

    Its status events (``run.<status>``) decide: a terminal one finishes it, a later
    live one (a resume) reopens it; any other event changes nothing. Streams of the
    event log end where this turns true at the end of what they have read.
    """
    status = event_kind[4:] if event_kind.startswith("run.") else ""
    if status in TERMINAL_RUN_STATUSES:
        return True
    return False if status in LIVE_RUN_STATUSES else finished


class AgentId(NamedTuple):
    """An agent is one role inside one run; its id is ``"run/role"`` (``str(agent_id)``).

    The one place that format is built or parsed: roles may contain ``/``, run ids
    may not (``parse`` splits at the first one).
    """

    run_id: str
    role: str

    def __str__(self) -> str:
        return f"{self.run_id}/{self.role}" if self.run_id else self.role

    @classmethod
    def parse(cls, text: str) -> AgentId:
        """``"run/role"`` -> ``AgentId``; text without a ``/`` is a role of no run."""
        run_id, sep, role = text.partition("/")
        return cls(run_id, role) if sep else cls("", text)


@dataclass(frozen=True, slots=True)
class Run:
    """One execution of a pipeline."""

    id: str
    pipeline: str
    input: JSON
    status: RunStatus
    created_at: float
    updated_at: float
    error: str | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float = 0.0
    steps: int = 0
    last_seq: int = 0
    version: str = ""
    """The version of the pipeline it runs on (``orchestra.coordinator.versions``); empty
    for a run made before versions were recorded, which any version may take."""

    @property
    def reason(self) -> PauseReason | None:
        """Why the run is paused (None unless it is): its token cap is the only reason
        there is, so the status says it; ``error`` holds the words."""
        return "budget" if self.status == "paused" else None


@dataclass(frozen=True, slots=True)
class Task:
    """A unit of work for one role inside a run.

    ``attempt`` counts claims and doubles as the lease fencing token: a worker's
    writes carry the attempt it claimed, so a worker whose lease expired cannot
    write over the next claimant. ``retries`` counts failed attempts that were
    retried; the step journal is keyed per retry so a retry starts fresh while a
    resume after a crash replays. ``retry_attempt`` is the claim that began the
    current retry: a later claim of the same retry (its process died) runs the
    retry's first step again, a reissue.
    """

    id: str
    run_id: str
    role: str
    input: JSON
    status: TaskStatus
    attempt: int = 0
    retries: int = 0
    max_attempts: int = 3
    lease_owner: str | None = None
    lease_expires_at: float | None = None
    not_before: float = 0.0
    result: JSON = None
    error: str | None = None
    parent_id: str | None = None
    cause: str | None = None
    key: str | None = None
    created_at: float = 0.0
    updated_at: float = 0.0
    retry_attempt: int = 1


@dataclass(frozen=True, slots=True)
class Plan:
    """A versioned structured plan; the highest version supersedes the rest."""

    run_id: str
    version: int
    author: str
    body: JSON
    created_at: float


@dataclass(frozen=True, slots=True)
class Handoff:
    """A posting from one agent to a role; committing it created ``task_id``."""

    id: str
    run_id: str
    from_agent: str
    to_role: str
    payload: JSON
    note: str
    task_id: str
    created_at: float


@dataclass(frozen=True, slots=True)
class Note:
    """Shared knowledge any agent can write and full-text search, within its ``scope``.

    ``rank`` is set by a text search: higher is more relevant, comparable only
    within one result (each backend scores in its own way).
    """

    id: int
    run_id: str
    author: str
    body: str
    tags: tuple[str, ...] = ()
    created_at: float = 0.0
    rank: float | None = None
    scope: Scope = PUBLIC
    """Who may read it: a role outside it never does (``visible_to``, as for entries)."""

    @property
    def author_role(self) -> str:
        return AgentId.parse(self.author).role


@dataclass(frozen=True, slots=True)
class ToolCallRecord:
    """A tool call as the model wrote it; ``arguments`` is the raw JSON text."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class Message:
    """One entry in an agent's append-only history (``seq`` is per agent)."""

    role: MessageRole
    content: str
    tool_calls: tuple[ToolCallRecord, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    agent_id: str = ""
    seq: int = 0
    task_id: str | None = None


@dataclass(frozen=True, slots=True)
class CompactionRecord:
    """Says that ``summary`` replaces messages ``first_seq..last_seq`` in the model's view."""

    agent_id: str
    first_seq: int
    last_seq: int
    summary: str
    task_id: str | None = None
    step: int | None = None
    id: int = 0
    created_at: float = 0.0


@dataclass(frozen=True, slots=True)
class Step:
    """One journaled model call, tool call or compaction inside a task."""

    task_id: str
    retry: int
    step: int
    kind: StepKind
    name: str
    input_digest: str
    status: StepStatus
    output: JSON = None
    error: str | None = None
    attempts: int = 1
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float = 0.0
    started_at: float = 0.0
    finished_at: float | None = None


@dataclass(frozen=True, slots=True)
class Approval:
    """A pending or decided human decision on one tool call."""

    id: str
    run_id: str
    task_id: str
    step: int
    tool: str
    arguments: JSON
    status: ApprovalStatus
    decided_by: str | None = None
    reason: str | None = None
    created_at: float = 0.0
    decided_at: float | None = None


@dataclass(frozen=True, slots=True)
class Event:
    """An entry in a run's append-only event log; ``seq`` is gap-free per run."""

    run_id: str
    seq: int
    kind: str
    data: JSON
    at: float


@dataclass(frozen=True, slots=True)
class AgentInfo:
    """Per-agent totals and restart point, derived from the journal."""

    agent_id: str
    role: str
    messages: int
    steps_completed: int
    steps_reissued: int
    tokens_in: int
    tokens_out: int
    restart_point: dict[str, Any] | None = field(default=None)
    cost: float = 0.0
    """USD of the agent's journaled calls (its role's steps in the run)."""
