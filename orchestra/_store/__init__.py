"""The blackboard: the storage protocol and its SQLite implementation."""

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
