"""The blackboard protocol: the only way agents, the runtime and the coordinator
touch durable state.

Every method that changes state commits the change, the rows it creates and the
event that reports it in one transaction, or nothing at all. Writes that belong
to a step or a task's end (messages, notes, plans, handoffs, compaction records)
travel in a :class:`Writes` bundle so that they commit atomically with the
journal row: on replay a completed step's writes are never applied twice.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from orchestra._entries import PUBLIC, Entry, Scope
from orchestra._types import (
    JSON,
    AgentInfo,
    Approval,
    CompactionRecord,
    Event,
    Handoff,
    Message,
    Note,
    Plan,
    Run,
    RunStatus,
    Step,
    StepKind,
    Task,
)
from orchestra.store.entry_protocol import Entries, NewEntry, NewTrigger

StatementTrace = Callable[[str, str], None]
"""A store's statement hook, given when it opens (``trace=``), as sqlite3's
``set_trace_callback``: called on the event loop with ``(connection, sql)`` for each
statement the store sends, ``connection`` naming which of its connections sent it
(SQLite: ``"writer"`` or ``"reader"``, as the statement goes; PostgreSQL: ``"pool"``,
as it completes, through asyncpg's query logger). For tests and profiling: a store
opened without one pays nothing per statement."""


@dataclass(frozen=True, slots=True)
class NewTask:
    """A task to create. ``key`` (unique per run) makes creation idempotent."""

    role: str
    input: JSON
    max_attempts: int = 3
    key: str | None = None
    parent_id: str | None = None
    cause: str | None = None
    not_before: float = 0.0


@dataclass(frozen=True, slots=True)
class NewHandoff:
    """A posting to a role; committing it creates the receiving task."""

    to_role: str
    payload: JSON
    note: str = ""
    max_attempts: int = 3
    key: str | None = None


@dataclass(frozen=True, slots=True)
class NewNote:
    body: str
    tags: tuple[str, ...] = ()
    scope: Scope = PUBLIC
    """Who may read it (public unless said): ``Scope.roles("critic")``, ``PRIVATE``..."""


@dataclass(slots=True)
class Writes:
    """Board writes that commit together with a step or a task's end.

    ``messages`` and ``compactions`` belong to the writing agent; ``plans``,
    ``handoffs`` and ``notes`` are authored by it. ``events`` are extra
    ``(kind, data)`` pairs for the event log. ``entries`` are typed board entries
    authored by it; ``triggers``, the tasks subscribed roles get for them
    (``coordinator.subscriptions`` decides which).
    """

    messages: list[Message] = field(default_factory=list)
    compactions: list[CompactionRecord] = field(default_factory=list)
    plans: list[JSON] = field(default_factory=list)
    handoffs: list[NewHandoff] = field(default_factory=list)
    notes: list[NewNote] = field(default_factory=list)
    tasks: list[NewTask] = field(default_factory=list)
    events: list[tuple[str, JSON]] = field(default_factory=list)
    entries: list[NewEntry] = field(default_factory=list)
    triggers: list[NewTrigger] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.messages or self.compactions or self.plans or self.handoffs
                    or self.notes or self.tasks or self.events or self.entries
                    or self.triggers)


@dataclass(frozen=True, slots=True)
class Lease:
    """Who is writing for a task: the claimant and the attempt it claimed (fencing)."""

    owner: str
    attempt: int


@dataclass(frozen=True, slots=True)
class StepResult:
    """The outcome of one journaled step, committed by ``complete_step``."""

    task_id: str
    retry: int
    step: int
    kind: StepKind
    name: str
    input_digest: str
    output: JSON = None
    error: str | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float = 0.0


@dataclass(frozen=True, slots=True)
class Pruned:
    """What a prune deleted: the runs, the rows, the bytes returned to the OS, and the
    token deltas it folded into their steps in the runs it kept."""

    runs: list[str]
    rows: int
    freed_bytes: int = 0
    folded: int = 0


@dataclass(frozen=True, slots=True)
class ClaimSpec:
    """What a worker finishing a task will take next, in the same transaction."""

    owner: str
    capacity: dict[str, int]
    limit: int
    run_id: str | None = None
    lease_seconds: float = 30.0
    versions: tuple[str, ...] | None = None
    """Take only tasks of runs on one of these versions (or none recorded), as
    ``claim_tasks(versions=...)``; None: any run."""


class RunStore(Protocol):
    """Runs, and reads of their tasks. A run's id is unique in the store."""

    async def create_run(self, pipeline: str, input: JSON, *, run_id: str | None = None,
                         tasks: Sequence[NewTask] = (), settings: JSON = None,
                         version: str = "", manifest: JSON = None) -> Run: ...
    async def get_run(self, run_id: str) -> Run: ...
    async def run_statuses(self, run_ids: Sequence[str]) -> dict[str, RunStatus]: ...
    async def list_runs(self, *, active_only: bool = False, limit: int = 100,
                        status: RunStatus | None = None, pipeline: str | None = None,
                        before: tuple[float, str] | None = None) -> list[Run]: ...
    async def set_run_status(self, run_id: str, status: RunStatus, *, error: str | None = None,
                             only_from: Collection[RunStatus] | None = None) -> Run: ...
    async def set_run_status_noting(self, run_id: str, status: RunStatus, note: NewNote, *,
                                    author: str, error: str | None = None,
                                    only_from: Collection[RunStatus] | None = None) -> Run: ...
    async def fork_run(self, run_id: str, at_seq: int, *, fork_id: str | None = None,
                       input: JSON = None) -> Run: ...
    async def get_task(self, task_id: str) -> Task: ...
    async def list_tasks(self, run_id: str, *, status: str | None = None,
                         role: str | None = None) -> list[Task]: ...
    async def task_counts(self, run_id: str) -> dict[str, int]: ...


class Retention(Protocol):
    """Deleting finished runs completely (every row and index entry they own), and
    folding the token deltas of the runs kept into their steps (``store.folding``)."""

    async def delete_run(self, run_id: str) -> None: ...
    async def prune_runs(self, *, finished_before: float | None = None,
                         keep: int | None = None, vacuum: bool = False,
                         batch_rows: int = 20_000, fold: bool = True) -> Pruned: ...


class TaskQueue(Protocol):
    """Tasks as a leased work queue.

    A claim takes first the tasks whose lease expired (on the store's clock: their
    worker stopped heartbeating), then the oldest ready tasks (``pending``,
    ``not_before`` passed, run live), and bumps ``attempt``, the fencing token: every
    write under a ``Lease``
    is refused with ``LeaseLostError`` (and writes nothing) unless the task is still
    ``running`` with that owner and attempt. With ``versions`` (the code versions the
    claimer runs), a claim takes only tasks of runs on one of them or on none recorded,
    inside its one statement; None takes any run's. A task's ``key`` is unique per run:
    adding it again returns the existing task and writes nothing. ``serve_run``
    renews a process's claim to serve a run (like a lease); ``served_until`` tells
    a served run from one with no live worker, in times on the caller's clock (a
    backend on another host's clock converts its times).
    """

    async def add_tasks(self, run_id: str, tasks: Sequence[NewTask]) -> list[Task]: ...
    async def claim_task(self, owner: str, *, run_id: str | None = None,
                         roles: Collection[str] | None = None, lease_seconds: float = 30.0,
                         versions: Collection[str] | None = None) -> Task | None: ...
    async def claim_tasks(self, owner: str, *, capacity: dict[str, int], limit: int,
                          run_id: str | None = None, lease_seconds: float = 30.0,
                          versions: Collection[str] | None = None) -> list[Task]: ...
    async def heartbeat(self, task_id: str, lease: Lease, lease_seconds: float) -> bool: ...
    async def release_leases(self, run_id: str | None = None, *,
                             owners: Collection[str] = ()) -> list[Task]: ...
    async def retry_failed_tasks(self, run_id: str) -> list[Task]: ...
    async def complete_task(self, task_id: str, lease: Lease, result: JSON, *,
                            agent_id: str, writes: Writes | None = None,
                            step: StepResult | None = None,
                            claim: ClaimSpec | None = None) -> list[Task]:
        """Hand in the task's ``result`` with ``writes`` and its last step, and (with
        ``claim``) take the worker's next tasks, all in one transaction; the tasks
        claimed (none without ``claim``). The run's older pending tasks are claimed
        first, then the tasks this one routes (``writes.handoffs``) as they are made."""
        ...
    async def fail_task(self, task_id: str, lease: Lease, error: str, *,
                        retry_at: float | None = None, agent_id: str | None = None,
                        writes: Writes | None = None) -> Task: ...

    async def serve_run(self, run_id: str, owner: str, lease_seconds: float) -> None: ...
    async def served_until(self, run_ids: Sequence[str]) -> dict[str, float | None]: ...
    async def live_versions(self) -> set[str]: ...
    async def claimable_runs(self, *, limit: int, exclude: Sequence[str] = (),
                             versions: Sequence[str] | None = None) -> list[str]:
        """Up to ``limit`` live runs (not in ``exclude``) with a task a worker could claim
        now on the store's clock (pending and due, or running on an expired lease), oldest
        run first: one query, so a worker drives only runs it has work in. Its cost
        follows the live runs it walks, not the tasks the store holds. With ``versions``,
        only runs of those versions (and runs that recorded none)."""
        ...
    async def move_version(self, run_id: str, old: str, new: str, data: JSON) -> Run:
        """Move a run from version ``old`` to ``new`` with its ``run.upgraded`` event
        (``data``), in one transaction; ``UserError`` if it is on another version by then
        or a live process serves it."""
        ...


class StepJournal(Protocol):
    """The record of every model call, tool call and compaction, per task and retry.

    A completed step is final: completing it again raises ``StoreError`` and applies
    nothing. Starting a completed, failed or cancelled step is a no-op. Starting a
    step found ``started`` (its execution never recorded an outcome: the process
    running it died or lost its lease) counts one more attempt, a reissue.
    """

    async def get_steps(self, task_id: str, retry: int) -> list[Step]: ...
    async def start_step(self, task_id: str, retry: int, step: int, kind: StepKind,
                         name: str, input_digest: str, lease: Lease) -> None: ...
    async def complete_step(self, result: StepResult, lease: Lease, *, agent_id: str,
                            writes: Writes | None = None) -> None: ...
    async def step_counts(self, run_id: str) -> dict[str, int]: ...


class AgentHistory(Protocol):
    """Each agent's append-only history: ``seq`` is 1, 2, 3... per agent, assigned
    by the store when the messages commit (they arrive in a ``Writes``)."""

    async def get_messages(self, agent_id: str, *, after_seq: int = 0,
                           limit: int | None = None) -> list[Message]: ...
    async def search_messages(self, agent_id: str, text: str, *,
                              limit: int = 10) -> list[Message]: ...
    async def get_compactions(self, agent_id: str) -> list[CompactionRecord]: ...
    async def agent_infos(self, run_id: str) -> list[AgentInfo]: ...


class Board(Protocol):
    """What agents share: versioned plans, handoffs (each commits with the task it
    creates), and notes with full-text search (``Note.rank``: higher is more
    relevant, comparable only within one result)."""

    async def post_plan(self, run_id: str, author: str, body: JSON) -> Plan: ...
    async def post_handoff(self, run_id: str, from_agent: str, handoff: NewHandoff) -> Handoff: ...
    async def post_note(self, run_id: str, author: str, note: NewNote) -> Note: ...
    async def get_plans(self, run_id: str) -> list[Plan]: ...
    async def latest_plan(self, run_id: str) -> Plan | None: ...
    async def get_handoffs(self, run_id: str, *, to_role: str | None = None,
                           from_agent: str | None = None) -> list[Handoff]: ...
    async def search_notes(self, run_id: str | None = None, *, text: str | None = None,
                           author: str | None = None, tag: str | None = None,
                           limit: int = 50) -> list[Note]: ...


class Approvals(Protocol):
    """Human decisions on tool calls: requesting parks the task (``waiting``, no
    lease); deciding puts it back in the queue. A decision is final."""

    async def request_approval(self, task_id: str, lease: Lease, *, retry: int, step: int,
                               tool: str, arguments: JSON) -> Approval: ...
    async def find_approval(self, task_id: str, retry: int, step: int) -> Approval | None: ...
    async def get_approval(self, approval_id: str) -> Approval: ...
    async def list_approvals(self, run_id: str, *, status: str | None = None) -> list[Approval]: ...
    async def decide_approval(self, approval_id: str, *, approved: bool, by: str,
                              reason: str | None = None) -> Approval: ...


class EventLog(Protocol):
    """Each run's append-only log. Its ``seq`` is 1, 2, 3... with no gap and no
    duplicate, whichever processes write: an event commits with the change it
    reports, and a change rolled back takes its event with it. (A prune may later fold
    a completed call's token deltas into its step: the seqs left keep their order, and
    a reader continues past the holes; ``store.folding``.)"""

    async def append_event(self, run_id: str, kind: str, data: JSON) -> Event: ...
    async def events(self, run_id: str, *, starting_after: int = 0, limit: int = 500,
                     kinds: Sequence[str] | None = None) -> list[Event]:
        """Up to ``limit`` events after ``starting_after``, in seq order; ``kinds``: only
        events of those kinds (filtered by the store: a run's few settings events are
        read without its whole log)."""
        ...
    def follow(self, run_id: str, *, starting_after: int = 0) -> AsyncIterator[Event]:
        """Every event after ``starting_after``, in seq order, each once, including
        those committed later by any process, until the store is closed."""
        ...


class StepRecorder(Protocol):
    """What the journal writes: a step's start, and its outcome with its writes."""

    async def start_step(self, task_id: str, retry: int, step: int, kind: StepKind,
                         name: str, input_digest: str, lease: Lease) -> None: ...
    async def complete_step(self, result: StepResult, lease: Lease, *, agent_id: str,
                            writes: Writes | None = None) -> None: ...


class ApprovalRequests(Protocol):
    """What a tool call needing approval asks of the store: its decision, or a request."""

    async def request_approval(self, task_id: str, lease: Lease, *, retry: int, step: int,
                               tool: str, arguments: JSON) -> Approval: ...
    async def find_approval(self, task_id: str, retry: int, step: int) -> Approval | None: ...


class BoardReads(Protocol):
    """What a tool may read (``ToolContext.board``): notes and its agent's messages by
    search, plans and handoffs. A tool writes only through its context's ``writes``,
    which commit with its journal entry."""

    async def search_notes(self, run_id: str | None = None, *, text: str | None = None,
                           author: str | None = None, tag: str | None = None,
                           limit: int = 50) -> list[Note]: ...
    async def search_messages(self, agent_id: str, text: str, *,
                              limit: int = 10) -> list[Message]: ...
    async def get_plans(self, run_id: str) -> list[Plan]: ...
    async def latest_plan(self, run_id: str) -> Plan | None: ...
    async def get_handoffs(self, run_id: str, *, to_role: str | None = None,
                           from_agent: str | None = None) -> list[Handoff]: ...
    async def get_entries(self, run_id: str, *, type: str | None = None,
                          after: int = 0) -> list[Entry]: ...


class TaskStore(StepRecorder, AgentHistory, ApprovalRequests, BoardReads, Protocol):
    """What running one task touches (``TaskRunner`` and the parts it composes: the
    journal, the agent's history, tool calls and their approvals, the tools' board
    view). The task's end is committed by its caller (``TaskQueue.complete_task``)."""

    async def get_steps(self, task_id: str, retry: int) -> list[Step]: ...
    async def append_event(self, run_id: str, kind: str, data: JSON) -> Event:
        """A streaming model call's deltas, as events (``runtime.deltas``)."""
        ...


class Blackboard(RunStore, Retention, TaskQueue, StepJournal, AgentHistory, Board, Approvals,
                 EventLog, Entries, Protocol):
    """The whole store, as the runtime and coordinator use it. ``SQLiteBlackboard``
    implements it; ``tests/store_contract`` is what any implementation must pass."""

    async def close(self) -> None: ...
