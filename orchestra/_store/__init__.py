"""The blackboard: the storage protocol and its SQLite implementation."""

from orchestra._store.protocol import (
    Blackboard,
    ClaimSpec,
    Lease,
    NewHandoff,
    NewNote,
    NewTask,
    StepResult,
    Writes,
)
from orchestra._store.sqlite import SQLiteBlackboard

__all__ = [
    "Blackboard",
    "ClaimSpec",
    "Lease",
    "NewHandoff",
    "NewNote",
    "NewTask",
    "SQLiteBlackboard",
    "StepResult",
    "Writes",
]
