"""Rows to frozen records, with the column lists the SQL selects.

A row that does not parse raises ``StoreError`` naming its table and key. Skipping
it would silently lose data (an agent's history with a hole in it), so never do.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any

from orchestra._errors import StoreError
from orchestra._scopes import SCOPE_KINDS, Scope
from orchestra._types import (
    APPROVAL_STATUSES,
    JSON,
    MESSAGE_ROLES,
    RUN_STATUSES,
    STEP_KINDS,
    STEP_STATUSES,
    TASK_STATUSES,
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

Row = tuple[Any, ...]

RUN_COLS = ("id, pipeline, input, status, created_at, updated_at, error, tokens_in, "
            "tokens_out, cost, steps, last_seq, version")
# A result equal to the task's final reply is stored once, in that reply's message
# (``result`` NULL, ``result_msg`` its rowid); reading a task resolves it. Used only
# on the unaliased ``tasks`` table (SELECT ... FROM tasks, UPDATE tasks ... RETURNING).
TASK_COLS = ('id, run_id, role, input, status, attempt, retries, max_attempts, lease_owner, '
             'lease_expires_at, not_before, '
             'COALESCE(result, (SELECT m.content FROM messages m WHERE m.rowid = '
             'tasks.result_msg)), error, parent_id, cause, "key", created_at, updated_at, '
             'retry_attempt')
PLAN_COLS = "run_id, version, author, body, created_at"
HANDOFF_COLS = "id, run_id, from_agent, to_role, payload, note, task_id, created_at"
NOTE_COLS = "id, run_id, author, body, tags, created_at, scope"
NOTE_COLS_N = ", ".join("n." + c.strip() for c in NOTE_COLS.split(","))
MESSAGE_COLS = "role, content, tool_calls, tool_call_id, name, agent_id, seq, task_id"
COMPACTION_COLS = "agent_id, first_seq, last_seq, summary, task_id, step, id, created_at"
STEP_COLS = ("task_id, retry, step, kind, name, input_digest, status, output, error, attempts, "
             "tokens_in, tokens_out, cost, started_at, finished_at")
APPROVAL_COLS = ("id, run_id, task_id, step, tool, arguments, status, decided_by, reason, "
                 "created_at, decided_at")
EVENT_COLS = "run_id, seq, kind, data, at"

_RUN_STATUSES = frozenset(RUN_STATUSES)
_TASK_STATUSES = frozenset(TASK_STATUSES)
_STEP_STATUSES = frozenset(STEP_STATUSES)
_STEP_KINDS = frozenset(STEP_KINDS)
_APPROVAL_STATUSES = frozenset(APPROVAL_STATUSES)
_MESSAGE_ROLES = frozenset(MESSAGE_ROLES)


def bad_row(table: str, key: object, problem: str) -> StoreError:
    return StoreError(
        f"{table} row {key!r} is unreadable: {problem}. The file was changed outside "
        "orchestra or is damaged; repair or delete that row"
    )


def json_of(table: str, key: object, column: str, text: Any) -> JSON:
    """Parse a JSON column, or raise ``StoreError`` naming the row (never skip it)."""
    if text is None:
        return None
    if not isinstance(text, str):
        raise bad_row(table, key, f"column {column} holds {type(text).__name__}, not JSON text")
    try:
        return json.loads(text)
    except ValueError as exc:
        raise bad_row(table, key, f"column {column} holds invalid JSON ({exc})") from exc


def _enum(table: str, key: object, column: str, value: Any, allowed: Collection[str]) -> Any:
    if value not in allowed:
        raise bad_row(table, key, f"column {column} is {value!r}, not one of {sorted(allowed)}")
    return value


def run(row: Row) -> Run:
    key = row[0]
    return Run(key, row[1], json_of("runs", key, "input", row[2]),
               _enum("runs", key, "status", row[3], _RUN_STATUSES), *row[4:])


def task(row: Row) -> Task:
    # float(): RETURNING hands back a REAL column holding 0.0 as the int 0.
    key = row[0]
    return Task(key, row[1], row[2], json_of("tasks", key, "input", row[3]),
                _enum("tasks", key, "status", row[4], _TASK_STATUSES), row[5], row[6], row[7],
                row[8], row[9], float(row[10]), json_of("tasks", key, "result", row[11]), row[12],
                row[13], row[14], row[15], row[16], row[17], row[18])


def plan(row: Row) -> Plan:
    return Plan(row[0], row[1], row[2], json_of("plans", (row[0], row[1]), "body", row[3]), row[4])


def handoff(row: Row) -> Handoff:
    return Handoff(row[0], row[1], row[2], row[3], json_of("handoffs", row[0], "payload", row[4]),
                   row[5], row[6], row[7])


def scope_of(table: str, key: object, text: Any) -> Scope:
    """A scope column (an entry's, a note's), or ``StoreError`` naming the row."""
    scope = json_of(table, key, "scope", text)
    if not isinstance(scope, dict) or scope.get("kind") not in SCOPE_KINDS:
        raise bad_row(table, key, f"column scope is {scope!r}, not a scope")
    return Scope.from_json(scope)


def note(row: Row, rank: float | None = None) -> Note:
    key = row[0]
    tags = json_of("notes", key, "tags", row[4])
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise bad_row("notes", key, f"column tags is {tags!r}, not a list of strings")
    return Note(key, row[1], row[2], row[3], tuple(tags), row[5], rank,
                scope_of("notes", key, row[6]))


def message(row: Row) -> Message:
    key = (row[5], row[6])
    calls: tuple[ToolCallRecord, ...] = ()
    if row[2] is not None:
        raw = json_of("messages", key, "tool_calls", row[2])
        try:
            calls = tuple(ToolCallRecord(c["id"], c["name"], c["arguments"]) for c in raw)
        except (TypeError, KeyError) as exc:
            raise bad_row("messages", key, f"column tool_calls is malformed ({exc!r})") from exc
    role = _enum("messages", key, "role", row[0], _MESSAGE_ROLES)
    return Message(role, row[1], calls, *row[3:])


def compaction(row: Row) -> CompactionRecord:
    return CompactionRecord(*row)


def step(row: Row) -> Step:
    key = (row[0], row[1], row[2])
    return Step(row[0], row[1], row[2], _enum("steps", key, "kind", row[3], _STEP_KINDS),
                row[4], row[5], _enum("steps", key, "status", row[6], _STEP_STATUSES),
                json_of("steps", key, "output", row[7]), row[8], row[9], row[10], row[11],
                row[12], row[13], row[14])


def approval(row: Row) -> Approval:
    key = row[0]
    return Approval(key, row[1], row[2], row[3], row[4],
                    json_of("approvals", key, "arguments", row[5]),
                    _enum("approvals", key, "status", row[6], _APPROVAL_STATUSES), row[7],
                    row[8], row[9], row[10])


def event(row: Row) -> Event:
    data = json_of("events", (row[0], row[1]), "data", row[3])
    return Event(row[0], row[1], row[2], data, row[4])


def many_tasks(rows: list[Row]) -> list[Task]:
    return [task(r) for r in rows]

