"""What a backend gives the shared facade (``facade*.py``): its SQL, one module per concern.

The facade's logic is written once; a backend differs only in its SQL (its dialect)
and its driver. Each backend's modules of the same name (``sqlite/board.py``,
``postgres/board.py``, ...) offer the same functions, each taking the backend's write
transaction (``X``: a ``Txn``) or its read connection (``C``); the protocols below name
the ones the facade calls, so mypy checks every backend's modules against them. SQL
written once for both (``approvals``) is an object built on the backend's dialect
(``dialect``) in its place. The driver is the facade's ``_write`` and ``_read`` (see
``facade.Facade``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Collection, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

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
    Task,
)
from orchestra.store.protocol import Lease, NewHandoff, NewNote, NewTask, Writes
from orchestra.store.pruning import RetentionOps

C = TypeVar("C")  # a backend's read connection
X = TypeVar("X")  # a backend's write transaction
C_contra = TypeVar("C_contra", contravariant=True)
X_contra = TypeVar("X_contra", contravariant=True)


class EventSQL(Protocol[X_contra]):
    """``events``: the run's event log, appended inside any write."""

    def append_event(self, tx: X_contra, run_id: str, kind: str, data: JSON, /
                     ) -> Awaitable[Event]: ...


class BoardSQL(Protocol[X_contra]):
    """``board``: plans, handoffs (each creating its task) and notes."""

    def post_plan(self, tx: X_contra, run_id: str, author: str, body: JSON, /
                  ) -> Awaitable[Plan]: ...

    def post_handoff(self, tx: X_contra, run_id: str, from_agent: str, handoff: NewHandoff, /
                     ) -> Awaitable[Handoff]: ...

    def post_note(self, tx: X_contra, run_id: str, author: str, note: NewNote, /
                  ) -> Awaitable[Note]: ...


class ApprovalSQL(Protocol[X_contra]):
    """``approvals``: a tool call parked for a person, and that person's decision (written
    once: ``store/approvals.py``'s ``Approvals`` on the backend's dialect)."""

    def request_approval(self, tx: X_contra, task_id: str, lease: Lease, /, *, retry: int,
                         step: int, tool: str, arguments: JSON) -> Awaitable[Approval]: ...

    def decide_approval(self, tx: X_contra, approval_id: str, /, *, approved: bool, by: str,
                        reason: str | None) -> Awaitable[Approval]: ...


class RunSQL(Protocol[X_contra]):
    """``runs``: tasks added to a run after it was created; a run's status changed."""

    def add_tasks(self, tx: X_contra, run_id: str, tasks: Sequence[NewTask], /
                  ) -> Awaitable[list[Task]]: ...

    def set_run_status(self, tx: X_contra, run_id: str, status: RunStatus, error: str | None,
                       only_from: Collection[RunStatus] | None, /) -> Awaitable[Run]: ...


class TaskSQL(Protocol[X_contra]):
    """``tasks``: the queue's writes other than claims (those differ by backend)."""

    def retry_failed(self, tx: X_contra, run_id: str, /) -> Awaitable[list[Task]]: ...

    def heartbeat(self, tx: X_contra, task_id: str, lease: Lease, lease_seconds: float, /
                  ) -> Awaitable[bool]: ...

    def release_leases(self, tx: X_contra, /, *, run_id: str | None, owners: Collection[str]
                       ) -> Awaitable[list[Task]]: ...


class JournalSQL(Protocol[X_contra]):
    """``journal``: a task's failure, with whatever it wrote."""

    def fail_task(self, tx: X_contra, task_id: str, lease: Lease, error: str,
                  retry_at: float | None, agent_id: str | None, writes: Writes | None, /
                  ) -> Awaitable[Task]: ...


class ForkSQL(Protocol[X_contra]):
    """``fork``: a new run copied from another as it was at one event."""

    def fork_run(self, tx: X_contra, run_id: str, at_seq: int, fork_id: str | None,
                 input: JSON, /) -> Awaitable[Run]: ...


class VersionSQL(Protocol[X_contra]):
    """``versions``: moving a run to another version of the code."""

    def move_version(self, tx: X_contra, run_id: str, old: str, new: str, data: JSON, /
                     ) -> Awaitable[Run]: ...


class ServerSQL(Protocol[C_contra]):
    """``servers``: until when each run was last known to be served."""

    def alive_until(self, conn: C_contra, run_ids: Sequence[str], /
                    ) -> Awaitable[dict[str, float | None]]: ...

    def live_versions(self, conn: C_contra, /) -> Awaitable[set[str]]: ...


class BoardReadSQL(Protocol[C_contra]):
    """``board_reads``: the board and agents' histories, read."""

    def get_plans(self, conn: C_contra, run_id: str, /) -> Awaitable[list[Plan]]: ...

    def latest_plan(self, conn: C_contra, run_id: str, /) -> Awaitable[Plan | None]: ...

    def get_handoffs(self, conn: C_contra, run_id: str, to_role: str | None,
                     from_agent: str | None, /) -> Awaitable[list[Handoff]]: ...

    def search_notes(self, conn: C_contra, run_id: str | None, text: str | None,
                     author: str | None, tag: str | None, limit: int, /
                     ) -> Awaitable[list[Note]]: ...

    def search_messages(self, conn: C_contra, agent_id: str, text: str, limit: int, /
                        ) -> Awaitable[list[Message]]: ...

    def get_compactions(self, conn: C_contra, agent_id: str, /
                        ) -> Awaitable[list[CompactionRecord]]: ...

    def agent_infos(self, conn: C_contra, run_id: str, /) -> Awaitable[list[AgentInfo]]: ...


class ReadSQL(Protocol[C_contra]):
    """``reads``: runs, tasks, the journal, approvals and events, read."""

    def get_run(self, conn: C_contra, run_id: str, /) -> Awaitable[Run]: ...

    def run_statuses(self, conn: C_contra, run_ids: Sequence[str], /
                     ) -> Awaitable[dict[str, RunStatus]]: ...

    def list_runs(self, conn: C_contra, active_only: bool, limit: int, status: str | None,
                  pipeline: str | None, before: tuple[float, str] | None, /
                  ) -> Awaitable[list[Run]]: ...

    def get_task(self, conn: C_contra, task_id: str, /) -> Awaitable[Task]: ...

    def list_tasks(self, conn: C_contra, run_id: str, status: str | None, role: str | None, /
                   ) -> Awaitable[list[Task]]: ...

    def task_counts(self, conn: C_contra, run_id: str, /) -> Awaitable[dict[str, int]]: ...

    def get_steps(self, conn: C_contra, task_id: str, retry: int, /
                  ) -> Awaitable[list[Step]]: ...

    def step_counts(self, conn: C_contra, run_id: str, /) -> Awaitable[dict[str, int]]: ...

    def find_approval(self, conn: C_contra, task_id: str, retry: int, step: int, /
                      ) -> Awaitable[Approval | None]: ...

    def get_approval(self, conn: C_contra, approval_id: str, /) -> Awaitable[Approval]: ...

    def list_approvals(self, conn: C_contra, run_id: str, status: str | None, /
                       ) -> Awaitable[list[Approval]]: ...

    def events(self, conn: C_contra, run_id: str, starting_after: int, limit: int,
               kinds: Sequence[str] | None, /) -> Awaitable[list[Event]]: ...


@dataclass(frozen=True, slots=True)
class Backend(Generic[X, C]):
    """One backend's SQL by concern: its modules of these names, as the facade calls them."""

    events: EventSQL[X]
    board: BoardSQL[X]
    approvals: ApprovalSQL[X]
    runs: RunSQL[X]
    tasks: TaskSQL[X]
    journal: JournalSQL[X]
    fork: ForkSQL[X]
    versions: VersionSQL[X]
    retention: RetentionOps[C, X]
    servers: ServerSQL[C]
    board_reads: BoardReadSQL[C]
    reads: ReadSQL[C]
