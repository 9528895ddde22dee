"""The records a store holds and returns: runs, tasks, steps, messages, board postings,
approvals, events. ``Run`` and ``Task`` are also importable from ``orchestra``."""

from orchestra._types import (
    AgentInfo,
    Approval,
    CompactionRecord,
    Event,
    Handoff,
    Message,
    Note,
    Plan,
    Run,
    Step,
    Task,
    ToolCallRecord,
)

__all__ = [
    "AgentInfo",
    "Approval",
    "CompactionRecord",
    "Event",
    "Handoff",
    "Message",
    "Note",
    "Plan",
    "Run",
    "Step",
    "Task",
    "ToolCallRecord",
]
