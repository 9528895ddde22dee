"""The blackboard: the store protocols, their SQLite implementation, and the write bundles
(``Writes``, ``Lease``, ``StepResult``) the runtime commits with. Most programs need only
``SQLiteBlackboard`` and ``NewTask``/``NewHandoff``/``NewNote``, importable from ``orchestra``."""

from orchestra._store.protocol import (
    AgentHistory,
    Approvals,
    Blackboard,
    Board,
    ClaimSpec,
    EventLog,
    Lease,
    NewHandoff,
    NewNote,
    NewTask,
    RunStore,
    StepJournal,
    StepResult,
    TaskQueue,
    Writes,
)
from orchestra._store.sqlite import SQLiteBlackboard

__all__ = [
    "AgentHistory",
    "Approvals",
    "Blackboard",
    "Board",
    "ClaimSpec",
    "EventLog",
    "Lease",
    "NewHandoff",
    "NewNote",
    "NewTask",
    "RunStore",
    "SQLiteBlackboard",
    "StepJournal",
    "StepResult",
    "TaskQueue",
    "Writes",
]
