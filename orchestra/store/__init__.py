"""The blackboard: the store protocols, their SQLite implementation, and the write bundles
(``Writes``, ``Lease``, ``StepResult``) the runtime commits with. Most programs need only
``SQLiteBlackboard`` and ``NewTask``/``NewHandoff``/``NewNote``, importable from ``orchestra``.

Layout: the protocols and the records both backends share sit here (``protocol``,
``rows``, ``codec``, ``url``), and so do the rules both decide the same way without
SQL (``rules``, ``leases``, ``fork_replay``), the store's methods whose logic is the
same on both (``facade*.py``, over each backend's SQL as ``backend.Backend`` names it)
and the SQL written once in PostgreSQL's words (``approvals``, over ``dialect``'s driver
and dialect); each backend has a folder (``sqlite/``, ``postgres/``) with the same file
name for the same concern (``tasks``, ``journal``, ``board``, ``retention``, ``servers``,
``txn``, ...), so one diffs against the other; ``copy/`` moves runs between any two
stores.
"""

from orchestra.store.entry_protocol import Entries, NewEntry, NewTrigger
from orchestra.store.protocol import (
    AgentHistory,
    ApprovalRequests,
    Approvals,
    Blackboard,
    Board,
    BoardReads,
    ClaimSpec,
    EventLog,
    Lease,
    NewHandoff,
    NewNote,
    NewTask,
    RunStore,
    StatementTrace,
    StepJournal,
    StepRecorder,
    StepResult,
    TaskQueue,
    TaskStore,
    Writes,
)
from orchestra.store.sqlite.store import SQLiteBlackboard

__all__ = [
    "AgentHistory",
    "ApprovalRequests",
    "Approvals",
    "Blackboard",
    "Board",
    "BoardReads",
    "ClaimSpec",
    "Entries",
    "EventLog",
    "Lease",
    "NewEntry",
    "NewHandoff",
    "NewNote",
    "NewTask",
    "NewTrigger",
    "RunStore",
    "SQLiteBlackboard",
    "StatementTrace",
    "StepJournal",
    "StepRecorder",
    "StepResult",
    "TaskQueue",
    "TaskStore",
    "Writes",
]
