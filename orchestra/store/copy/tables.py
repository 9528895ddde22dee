"""The two ends of a copy agree here: every table a run owns with the columns both
backends share, the reads and inserts built from them, and what a side must do.

Apart from the copying itself (``orchestra.store.copy``) so that each side imports
this and nothing imports a side back."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

Row = tuple[Any, ...]

# Every table a run owns, in insertion order (parents before children), with the
# columns both backends share.
COLUMNS: dict[str, tuple[str, ...]] = {
    "runs": ("id", "pipeline", "input", "status", "created_at", "updated_at", "error",
             "tokens_in", "tokens_out", "cost", "steps", "last_seq", "version"),
    "run_servers": ("run_id", "owner", "seen_at", "expires_at"),
    "tasks": ("id", "run_id", "role", "input", "status", "attempt", "retries", "max_attempts",
              "lease_owner", "lease_expires_at", "not_before", "result", "error", "parent_id",
              "cause", '"key"', "from_agent", "handoff_note", "created_at", "updated_at",
              "retry_attempt"),
    "agents": ("id", "run_id", "role", "created_at"),
    "messages": ("agent_id", "seq", "task_id", "role", "content", "tool_calls", "tool_call_id",
                 "name", "created_at"),
    "compactions": ("agent_id", "first_seq", "last_seq", "summary", "task_id", "step",
                    "created_at"),
    "steps": ("task_id", "retry", "step", "kind", "name", "input_digest", "status", "output",
              "error", "attempts", "tokens_in", "tokens_out", "cost", "started_at",
              "finished_at"),
    "plans": ("run_id", "version", "author", "body", "created_at"),
    "notes": ("run_id", "author", "tags", "body", "created_at", "scope"),
    "approvals": ("id", "run_id", "task_id", "retry", "step", "tool", "arguments", "status",
                  "decided_by", "reason", "created_at", "decided_at"),
    "events": ("run_id", "seq", "kind", "data", "at"),
    # typed board entries (their position is the target's: the order is kept) and which
    # role each triggered (issue 48)
    "entries": ("id", "run_id", "type", "author", "body", "tags", "scope", "task_id",
                "created_at"),
    "consumptions": ("run_id", "trigger", "role", "task_id", "created_at"),
}


def _cols(table: str, alias: str = "") -> str:
    return ", ".join(alias + c for c in COLUMNS[table])


# $1 is the run id. {position}: the backend's insertion order of tasks and approvals;
# {result}: a task's result (SQLite may keep it in the final reply's message).
_OWNED = "WHERE run_id = $1"
READS: dict[str, str] = {
    "runs": f"SELECT {_cols('runs')} FROM runs WHERE id = $1",
    "run_servers": f"SELECT {_cols('run_servers')} FROM run_servers {_OWNED} ORDER BY owner",
    "tasks": f"SELECT {_cols('tasks').replace('result,', '{result},')} FROM tasks {_OWNED} "
             "ORDER BY {position}",
    "agents": f"SELECT {_cols('agents')} FROM agents {_OWNED} ORDER BY created_at, id",
    "messages": f"SELECT {_cols('messages', 'm.')} FROM messages m JOIN agents a "
                "ON a.id = m.agent_id WHERE a.run_id = $1 ORDER BY m.agent_id, m.seq",
    "compactions": f"SELECT {_cols('compactions', 'c.')} FROM compactions c JOIN agents a "
                   "ON a.id = c.agent_id WHERE a.run_id = $1 ORDER BY c.id",
    "steps": f"SELECT {_cols('steps', 's.')} FROM steps s JOIN tasks t ON t.id = s.task_id "
             "WHERE t.run_id = $1 ORDER BY s.task_id, s.retry, s.step",
    "plans": f"SELECT {_cols('plans')} FROM plans {_OWNED} ORDER BY version",
    "notes": f"SELECT id, {_cols('notes')} FROM notes {_OWNED} ORDER BY id",
    "approvals": f"SELECT {_cols('approvals')} FROM approvals {_OWNED} ORDER BY {{position}}",
    "events": f"SELECT {_cols('events')} FROM events {_OWNED} ORDER BY seq",
    "entries": f"SELECT {_cols('entries')} FROM entries {_OWNED} ORDER BY position",
    "consumptions": f"SELECT {_cols('consumptions')} FROM consumptions {_OWNED} "
                    "ORDER BY trigger, role",
}
LIVE_UNTIL = """
SELECT max(u) FROM (
    SELECT max(expires_at) AS u FROM run_servers WHERE run_id = $1
    UNION ALL
    SELECT max(lease_expires_at) FROM tasks WHERE run_id = $1 AND status = 'running') AS x"""
RUN_IDS = "SELECT id FROM runs ORDER BY created_at, id"
HAS_RUN = "SELECT 1 FROM runs WHERE id = $1"


def insert(table: str) -> str:
    cols = COLUMNS[table]
    values = ", ".join(f"${i}" for i in range(1, len(cols) + 1))
    tail = " RETURNING id" if table == "notes" else ""
    return f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({values}){tail}"


@dataclass
class RunRows:
    """One run's rows, table by table, in ``COLUMNS`` order (notes lead with their id)."""

    run_id: str
    tables: dict[str, list[Row]]

    @property
    def count(self) -> int:
        return sum(len(rows) for rows in self.tables.values())


class Side(Protocol):
    """One store's end of a copy: raw reads of a run in one snapshot, writes in one
    transaction. ``where`` names the store without its password."""

    where: str

    async def run_ids(self) -> list[str]: ...
    async def has_run(self, run_id: str) -> bool: ...
    async def read(self, run_id: str) -> tuple[RunRows, float | None, float]:
        """The run's rows, the latest of its live leases and serve claims, and the
        store's clock, all read in one snapshot."""
        ...
    async def write(self, rows: RunRows, fix_events: Callable[[RunRows, dict[int, int]],
                                                             None]) -> bool:
        """Insert the run in one transaction (False, writing nothing, if it exists)."""
        ...
    async def close(self) -> None: ...
