"""The records a store holds and returns: runs, tasks, steps, messages, board postings
(typed entries and their consumptions too), approvals, events. ``Run``, ``Task``,
``Entry`` and ``Scope`` are also importable from ``orchestra``."""

from orchestra._entries import Consumption, Entry, Scope
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
    "Consumption",
    "Entry",
    "Event",
    "Handoff",
    "Message",
    "Note",
    "Plan",
    "Run",
    "Scope",
    "Step",
    "Task",
    "ToolCallRecord",
]
