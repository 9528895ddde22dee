"""Reads of runs, tasks, the step journal, approvals and events.

Each function runs on the reader connection's thread in one hop. An empty result
for a run or task that does not exist raises ``NotFoundError`` instead of
looking like "nothing yet".
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence

from orchestra._errors import NotFoundError, StoreError
from orchestra._types import Approval, Event, Run, RunStatus, Step, Task
from orchestra.store import rows as _rows
from orchestra.store.sqlite.txn import Conn

_RUN = f"SELECT {_rows.RUN_COLS} FROM runs WHERE id = ?"
# newest first; ``(created_at, id) < cursor`` is the keyset page boundary (ties broken by id)
_RUNS = f"""
SELECT {_rows.RUN_COLS} FROM runs
WHERE (?1 = 0 OR status IN ('pending', 'running', 'waiting')) AND (?2 IS NULL OR status = ?2)
  AND (?3 IS NULL OR pipeline = ?3) AND (?4 IS NULL OR (created_at, id) < (?4, ?5))
ORDER BY created_at DESC, id DESC LIMIT ?6"""
_RUN_EXISTS = "SELECT 1 FROM runs WHERE id = ?"
_TASK = f"SELECT {_rows.TASK_COLS} FROM tasks WHERE id = ?"
_TASK_EXISTS = "SELECT 1 FROM tasks WHERE id = ?"
_TASKS = f"""
SELECT {_rows.TASK_COLS} FROM tasks
WHERE run_id = ?1 AND (?2 IS NULL OR status = ?2) AND (?3 IS NULL OR role = ?3)
ORDER BY created_at, rowid"""
_TASK_COUNTS = "SELECT status, COUNT(*) FROM tasks WHERE run_id = ? GROUP BY status"
_STEPS = f"SELECT {_rows.STEP_COLS} FROM steps WHERE task_id = ? AND retry = ? ORDER BY step"
# ``retried``: a step of a later retry of its task (the task failed on an error and
# ran again with a fresh journal) whose number an earlier retry also executed.
_STEP_COUNTS = """
SELECT COALESCE(SUM(s.status = 'completed'), 0), COALESCE(SUM(s.status = 'failed'), 0),
       COALESCE(SUM(s.status = 'started'), 0), COALESCE(SUM(s.status = 'cancelled'), 0),
       COALESCE(SUM(s.attempts - 1), 0),
       COALESCE(SUM(s.retry > 0 AND EXISTS (SELECT 1 FROM steps p WHERE p.task_id = s.task_id
                                            AND p.retry < s.retry AND p.step = s.step)), 0)
FROM steps s JOIN tasks t ON t.id = s.task_id WHERE t.run_id = ?"""
# A claimed task whose retry has no first step yet has it in flight: its claim journals it.
_FIRST_STEPS_IN_FLIGHT = """
SELECT COUNT(*) FROM tasks t WHERE t.run_id = ? AND t.status = 'running' AND NOT EXISTS (
    SELECT 1 FROM steps s WHERE s.task_id = t.id AND s.retry = t.retries AND s.step = 1)"""
_APPROVAL_BY_STEP = (
    f"SELECT {_rows.APPROVAL_COLS} FROM approvals WHERE task_id = ? AND retry = ? AND step = ?"
)
_APPROVAL = f"SELECT {_rows.APPROVAL_COLS} FROM approvals WHERE id = ?"
_APPROVALS = f"""
SELECT {_rows.APPROVAL_COLS} FROM approvals
WHERE run_id = ?1 AND (?2 IS NULL OR status = ?2) ORDER BY created_at, rowid"""
_EVENTS = f"SELECT {_rows.EVENT_COLS} FROM events WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?"
_EVENTS_OF_KINDS = (
    f"SELECT {_rows.EVENT_COLS} FROM events WHERE run_id = ? AND seq > ? "
    "AND kind IN (SELECT value FROM json_each(?)) ORDER BY seq LIMIT ?"
)


async def require_run(conn: Conn, run_id: str) -> None:
    if (await conn.execute(_RUN_EXISTS, (run_id,))).fetchone() is None:
        raise NotFoundError(f"run {run_id!r} does not exist")


_RUN_STATUSES = "SELECT id, status FROM runs WHERE id IN (SELECT value FROM json_each(?))"


async def run_statuses(conn: Conn, run_ids: Sequence[str]) -> dict[str, RunStatus]:
    """The status of each of ``run_ids`` that exists (one read for many runs)."""
    return dict((await conn.execute(_RUN_STATUSES, (json.dumps(list(run_ids)),))).fetchall())


async def get_run(conn: Conn, run_id: str) -> Run:
    row = (await conn.execute(_RUN, (run_id,))).fetchone()
    if row is None:
        raise NotFoundError(f"run {run_id!r} does not exist")
    return _rows.run(row)


async def list_runs(conn: Conn, active_only: bool, limit: int, status: str | None,
              pipeline: str | None, before: tuple[float, str] | None) -> list[Run]:
    at, run_id = before if before is not None else (None, None)
    rows = (await conn.execute(_RUNS, (int(active_only), status, pipeline, at, run_id,
                                limit))).fetchall()
    return [_rows.run(r) for r in rows]


async def get_task(conn: Conn, task_id: str) -> Task:
    row = (await conn.execute(_TASK, (task_id,))).fetchone()
    if row is None:
        raise NotFoundError(f"task {task_id!r} does not exist")
    return _rows.task(row)


async def list_tasks(conn: Conn, run_id: str, status: str | None,
               role: str | None) -> list[Task]:
    rows = (await conn.execute(_TASKS, (run_id, status, role))).fetchall()
    if not rows:
        await require_run(conn, run_id)
    return _rows.many_tasks(rows)


async def task_counts(conn: Conn, run_id: str) -> dict[str, int]:
    counts = {status: n for status, n in (await conn.execute(_TASK_COUNTS, (run_id,))).fetchall()}
    if not counts:
        await require_run(conn, run_id)
    return counts


_MESSAGE_CONTENT = "SELECT content, tool_calls FROM messages WHERE agent_id = ? AND seq = ?"


async def get_steps(conn: Conn, task_id: str, retry: int) -> list[Step]:
    rows = (await conn.execute(_STEPS, (task_id, retry))).fetchall()
    if not rows and (await conn.execute(_TASK_EXISTS, (task_id,))).fetchone() is None:
        raise NotFoundError(f"task {task_id!r} does not exist")
    steps = [_rows.step(r) for r in rows]
    return [await _resolve_reply(conn, s) for s in steps]


async def _resolve_reply(conn: Conn, step: Step) -> Step:
    """Put back a model reply the journal stored as a pointer to its message."""
    out = step.output
    if not isinstance(out, dict) or "text_seq" not in out:
        return step
    found = await conn.execute(_MESSAGE_CONTENT, (out.get("text_agent"), out["text_seq"]))
    row = found.fetchone()
    if row is None:
        raise StoreError(f"step {step.step} of task {step.task_id}: its reply points at message "
                         f"{out['text_seq']} of {out.get('text_agent')}, which does not exist")
    output = {k: v for k, v in out.items() if k not in ("text_seq", "text_agent")}
    output["text"] = row[0]
    if "calls" in output and output["calls"] is None:  # the calls are the message's too
        output["calls"] = [[c["id"], c["name"], c["arguments"]]
                           for c in (json.loads(row[1]) if row[1] else [])]
    return dataclasses.replace(step, output=output)


async def step_counts(conn: Conn, run_id: str) -> dict[str, int]:
    """Journal totals; ``reissued`` sums ``attempts - 1`` (see ``Blackboard.step_counts``)."""
    await require_run(conn, run_id)
    completed, failed, started, cancelled, reissued, retried = (await conn.execute(
        _STEP_COUNTS, (run_id,))).fetchone()
    started += (await conn.execute(_FIRST_STEPS_IN_FLIGHT, (run_id,))).fetchone()[0]
    return {"completed": completed, "failed": failed, "started": started,
            "cancelled": cancelled, "reissued": reissued, "retried": retried}


async def find_approval(conn: Conn, task_id: str, retry: int,
                  step: int) -> Approval | None:
    row = (await conn.execute(_APPROVAL_BY_STEP, (task_id, retry, step))).fetchone()
    return None if row is None else _rows.approval(row)


async def get_approval(conn: Conn, approval_id: str) -> Approval:
    row = (await conn.execute(_APPROVAL, (approval_id,))).fetchone()
    if row is None:
        raise NotFoundError(f"approval {approval_id!r} does not exist")
    return _rows.approval(row)


async def list_approvals(conn: Conn, run_id: str, status: str | None) -> list[Approval]:
    rows = (await conn.execute(_APPROVALS, (run_id, status))).fetchall()
    if not rows:
        await require_run(conn, run_id)
    return [_rows.approval(r) for r in rows]


async def events(conn: Conn, run_id: str, starting_after: int, limit: int,
                 kinds: Sequence[str] | None) -> list[Event]:
    rows = (await conn.execute(_EVENTS, (run_id, starting_after, limit)) if kinds is None
            else await conn.execute(_EVENTS_OF_KINDS, (run_id, starting_after,
                                                       json.dumps(list(kinds)), limit))
            ).fetchall()
    if not rows:
        await require_run(conn, run_id)
    return [_rows.event(r) for r in rows]
