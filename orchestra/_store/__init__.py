"""The blackboard: the storage protocols and their SQLite implementation.

The one list of public store names: ``orchestra.store`` re-exports this ``__all__``."""

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
