"""Fork a run at an event: a new run holding the old one's state right after that event.

The event log says exactly what existed at a seq: which tasks (``task.created``,
``handoff.posted``) and in which state, which steps had completed (``step.*``, under
the retry the task was in), which notes, plans and approvals. Those rows are copied
under new ids; everything later is left out, so resuming the fork replays the copied
steps from its journal and runs the rest anew. Messages and compactions carry no
event of their own: they commit in the same write as their step or task end, with
that write's timestamp, so they are cut by the fork point's time.

The fork point is widened to the end of its write (a task's end reports its step,
its handoffs and its completion together): a state in the middle of one commit
never existed. The source run is only read.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field

from orchestra._errors import NotFoundError, UserError
from orchestra._store import _rows
from orchestra._store._codec import Encoder, new_id
from orchestra._types import JSON, TERMINAL_RUN_STATUSES, AgentId, Run

_RUN = "SELECT pipeline, input, status, last_seq FROM runs WHERE id = ?"
_EVENTS = "SELECT seq, kind, data, at FROM events WHERE run_id = ? AND seq <= ? ORDER BY seq"
_SAME_WRITE = "SELECT seq, at FROM events WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT 256"
_TASKS = """
SELECT id, role, input, status, max_attempts, not_before, COALESCE(result,
    (SELECT m.content FROM messages m WHERE m.rowid = tasks.result_msg)), error, parent_id,
    cause, "key", created_at, updated_at, from_agent, handoff_note
FROM tasks WHERE run_id = ?"""
_INSERT_TASK = """
INSERT INTO tasks (id, run_id, role, input, status, attempt, retries, max_attempts, not_before,
    result, error, parent_id, cause, "key", created_at, updated_at, from_agent, handoff_note)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"""
_STEPS = """
SELECT s.task_id, s.retry, s.step, s.kind, s.name, s.input_digest, s.status, s.output, s.error,
    s.attempts, s.tokens_in, s.tokens_out, s.cost, s.started_at, s.finished_at
FROM steps s JOIN tasks t ON t.id = s.task_id WHERE t.run_id = ?"""
_INSERT_STEP = "INSERT INTO steps VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
_AGENTS = "SELECT id, role, created_at FROM agents WHERE run_id = ? AND created_at <= ?"
_MESSAGES = """
SELECT seq, task_id, role, content, tool_calls, tool_call_id, name, created_at
FROM messages WHERE agent_id = ? AND created_at <= ? ORDER BY seq"""
_COMPACTIONS = """
SELECT first_seq, last_seq, summary, task_id, step, created_at
FROM compactions WHERE agent_id = ? AND created_at <= ? ORDER BY id"""
_NOTES = "SELECT id, author, tags, body, created_at FROM notes WHERE run_id = ? ORDER BY id"
_PLANS = "SELECT version, author, body, created_at FROM plans WHERE run_id = ? ORDER BY version"
_APPROVALS = """
SELECT id, task_id, retry, step, tool, arguments, status, decided_by, reason, created_at,
    decided_at FROM approvals WHERE run_id = ?"""


@dataclass
class _TaskAt:
    """A task as the log shows it at the fork point."""

    status: str = "pending"
    claims: int = 0
    retries: int = 0


@dataclass
class _Cut:
    """What existed at the fork point, read off the event log."""

    tasks: dict[str, _TaskAt] = field(default_factory=dict)
    steps: set[tuple[str, int, int]] = field(default_factory=set)
    notes: set[int] = field(default_factory=set)
    plans: set[int] = field(default_factory=set)
    approvals: dict[str, bool] = field(default_factory=dict)
    """Approval id -> decided by the fork point."""
    run_status: str | None = None


_TASK_STATUS = {"task.claimed": "running", "task.completed": "completed",
                "task.failed": "failed", "task.retrying": "pending",
                "task.requeued": "pending", "task.cancelled": "cancelled",
                "task.waiting": "waiting"}


def _read_cut(events: list[tuple[int, str, JSON, float]]) -> _Cut:
    cut = _Cut()
    for _, kind, data, _ in events:
        task_id = data.get("task") if isinstance(data, dict) else None
        if kind in ("task.created", "handoff.posted") and task_id:
            cut.tasks[task_id] = _TaskAt()
        elif kind in _TASK_STATUS and task_id in cut.tasks:
            state = cut.tasks[task_id]
            state.status = _TASK_STATUS[kind]
            state.claims += kind == "task.claimed"
            if isinstance(data.get("retries"), int):
                state.retries = data["retries"]
        elif kind in ("step.completed", "step.failed") and task_id in cut.tasks:
            cut.steps.add((task_id, cut.tasks[task_id].retries, data["step"]))
        elif kind == "note.posted":
            cut.notes.add(data["note"])
        elif kind == "plan.posted":
            cut.plans.add(data["version"])
        elif kind == "approval.requested":
            cut.approvals[data["approval"]] = False
        elif kind == "approval.decided":
            cut.approvals[data["approval"]] = True
        elif kind.startswith("run.") and kind[4:] in TERMINAL_RUN_STATUSES:
            cut.run_status = kind[4:]
        elif kind in ("run.running", "run.pending", "run.waiting"):
            cut.run_status = None
    return cut


def _end_of_write(conn: sqlite3.Connection, run_id: str, seq: int, at: float) -> int:
    """The last seq committed by the same write as ``seq`` (events of one write share ``at``)."""
    for next_seq, next_at in conn.execute(_SAME_WRITE, (run_id, seq)).fetchall():
        if next_at != at or next_seq != seq + 1:
            break
        seq = next_seq
    return seq


class _Ids:
    """Old ids to the fork's: tasks get new ids, agents ``run/role`` the fork's run id."""

    def __init__(self, run_id: str, fork_id: str, tasks: dict[str, _TaskAt]) -> None:
        self.run_id, self.fork_id = run_id, fork_id
        self.tasks = {old: new_id() for old in tasks}
        self.approvals: dict[str, str] = {}

    def agent(self, agent_id: str | None) -> str | None:
        if agent_id is None:
            return None
        parsed = AgentId.parse(agent_id)
        return str(AgentId(self.fork_id, parsed.role)) if parsed.run_id == self.run_id \
            else agent_id

    def task(self, task_id: str | None) -> str | None:
        return None if task_id is None else self.tasks.get(task_id)

    def cause(self, cause: str | None) -> str | None:
        if cause is not None and cause.startswith("task:"):
            return f"task:{self.tasks.get(cause[5:], cause[5:])}"
        return cause

    def data(self, data: JSON) -> JSON:
        """Event data with the task and agent ids it names rewritten."""
        if not isinstance(data, dict):
            return data
        out = dict(data)
        if isinstance(out.get("task"), str):
            out["task"] = self.tasks.get(out["task"], out["task"])
        if isinstance(out.get("approval"), str):
            out["approval"] = self.approvals.get(out["approval"], out["approval"])
        for key in ("from", "author"):
            if isinstance(out.get(key), str):
                out[key] = self.agent(out[key])
        return out


def fork_run(conn: sqlite3.Connection, enc: Encoder, run_id: str, at_seq: int,
             fork_id: str | None, input: JSON, now: float) -> Run:
    """Create the fork of ``run_id`` right after event ``at_seq`` (widened to the end of
    its write); ``input`` replaces the run's input when not None (e.g. the models the
    fork runs with). Returns the fork, ``pending`` unless it was finished by then."""
    row = conn.execute(_RUN, (run_id,)).fetchone()
    if row is None:
        raise NotFoundError(f"run {run_id!r} does not exist")
    pipeline, input_text, _, last_seq = row
    if isinstance(at_seq, bool) or not isinstance(at_seq, int) or not 1 <= at_seq <= last_seq:
        raise UserError(f"run {run_id} has events 1..{last_seq}; {at_seq!r} is not one of "
                        "them (see `orchestra events RUN`)")
    fork_id = new_id(12) if fork_id is None else fork_id
    if not fork_id or conn.execute("SELECT 1 FROM runs WHERE id = ?", (fork_id,)).fetchone():
        raise UserError(f"run {fork_id!r} already exists; choose another id for the fork")
    at = conn.execute("SELECT at FROM events WHERE run_id = ? AND seq = ?",
                      (run_id, at_seq)).fetchone()[0]
    end = _end_of_write(conn, run_id, at_seq, at)
    events = [(seq, kind, _rows.json_of("events", (run_id, seq), "data", data), t)
              for seq, kind, data, t in conn.execute(_EVENTS, (run_id, end)).fetchall()]
    cut = _read_cut(events)
    ids = _Ids(run_id, fork_id, cut.tasks)
    live = any(t.status not in TERMINAL_RUN_STATUSES for t in cut.tasks.values())
    status = cut.run_status if cut.run_status is not None and not live else "pending"
    run_input = input_text if input is None else enc.json(input, f"input of run {fork_id}")
    conn.execute("INSERT INTO runs (id, pipeline, input, status, created_at, updated_at, "
                 "last_seq) VALUES (?, ?, ?, ?, ?, ?, ?)",
                 (fork_id, pipeline, run_input, status, now, now, end + 1))
    _copy_tasks(conn, cut, ids, now)
    totals = _copy_steps(conn, cut, ids)
    _copy_history(conn, ids, at)
    _copy_board(conn, cut, ids)  # before the events: it names the approvals' new ids
    rows = [(fork_id, seq, kind, enc.json(ids.data(data), "event data"), t)
            for seq, kind, data, t in events]
    rows.append((fork_id, end + 1, "run.forked",
                 enc.json({"from": run_id, "at": end}, "event data"), now))
    conn.executemany("INSERT INTO events (run_id, seq, kind, data, at) VALUES (?, ?, ?, ?, ?)",
                     rows)
    conn.execute("UPDATE runs SET tokens_in = ?, tokens_out = ?, cost = ?, steps = ? "
                 "WHERE id = ?", (*totals, fork_id))
    return _rows.run(conn.execute(f"SELECT {_rows.RUN_COLS} FROM runs WHERE id = ?",
                                  (fork_id,)).fetchone())


def _copy_tasks(conn: sqlite3.Connection, cut: _Cut, ids: _Ids, now: float) -> None:
    rows = []
    for (old, role, input_text, _, max_attempts, not_before, result, error, parent, cause,
         key, created, updated, from_agent, note) in conn.execute(_TASKS, (ids.run_id,)):
        state = cut.tasks.get(old)
        if state is None:
            continue  # created after the fork point
        finished = state.status in ("completed", "failed", "cancelled")
        status = state.status if finished or state.status == "waiting" else "pending"
        rows.append((ids.tasks[old], ids.fork_id, role, input_text, status, state.claims,
                     state.retries, max_attempts, not_before if finished else 0.0,
                     result if state.status == "completed" else None,
                     error if state.status == "failed" else None, ids.task(parent),
                     ids.cause(cause), key, created, updated if finished else now,
                     ids.agent(from_agent), note))
    conn.executemany(_INSERT_TASK, rows)


def _copy_steps(conn: sqlite3.Connection, cut: _Cut, ids: _Ids) -> tuple[int, int, float, int]:
    """Copy the steps finished by the fork point; return the fork's totals."""
    rows = []
    tokens_in = tokens_out = 0
    cost = 0.0
    for row in conn.execute(_STEPS, (ids.run_id,)):
        if (row[0], row[1], row[2]) not in cut.steps:
            continue
        output = row[7]
        if output is not None and '"text_agent"' in output:
            value = json.loads(output)
            value["text_agent"] = ids.agent(value.get("text_agent"))
            output = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
        rows.append((ids.tasks[row[0]], *row[1:7], output, *row[8:]))
        tokens_in += row[10]
        tokens_out += row[11]
        cost += row[12]
    conn.executemany(_INSERT_STEP, rows)
    return tokens_in, tokens_out, cost, len(rows)


def _copy_history(conn: sqlite3.Connection, ids: _Ids, at: float) -> None:
    """Agents, their messages and compactions committed by the fork point's write."""
    for agent_id, role, created in conn.execute(_AGENTS, (ids.run_id, at)).fetchall():
        new_agent = ids.agent(agent_id)
        conn.execute("INSERT INTO agents (id, run_id, role, created_at) VALUES (?, ?, ?, ?)",
                     (new_agent, ids.fork_id, role, created))
        conn.executemany(
            "INSERT INTO messages (agent_id, seq, task_id, role, content, tool_calls, "
            "tool_call_id, name, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(new_agent, seq, ids.task(task), *rest) for seq, task, *rest
             in conn.execute(_MESSAGES, (agent_id, at))])
        conn.executemany(
            "INSERT INTO compactions (agent_id, first_seq, last_seq, summary, task_id, step, "
            "created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [(new_agent, first, last, summary, ids.task(task), step, created)
             for first, last, summary, task, step, created
             in conn.execute(_COMPACTIONS, (agent_id, at))])


def _copy_board(conn: sqlite3.Connection, cut: _Cut, ids: _Ids) -> None:
    """Notes, plans and approvals posted by the fork point (decisions made after it undone)."""
    conn.executemany(
        "INSERT INTO notes (run_id, author, tags, body, created_at) VALUES (?, ?, ?, ?, ?)",
        [(ids.fork_id, ids.agent(author), tags, body, created)
         for note_id, author, tags, body, created in conn.execute(_NOTES, (ids.run_id,))
         if note_id in cut.notes])
    conn.executemany(
        "INSERT INTO plans (run_id, version, author, body, created_at) VALUES (?, ?, ?, ?, ?)",
        [(ids.fork_id, version, ids.agent(author), body, created)
         for version, author, body, created in conn.execute(_PLANS, (ids.run_id,))
         if version in cut.plans])
    rows = []
    for (old, task, retry, step, tool, args, status, by, reason, created,
         decided) in conn.execute(_APPROVALS, (ids.run_id,)):
        if old not in cut.approvals or task not in ids.tasks:
            continue
        if not cut.approvals[old]:
            status, by, reason, decided = "pending", None, None, None
        ids.approvals[old] = new_id()
        rows.append((ids.approvals[old], ids.fork_id, ids.tasks[task], retry, step, tool, args,
                     status, by, reason, created, decided))
    conn.executemany(
        "INSERT INTO approvals (id, run_id, task_id, retry, step, tool, arguments, status, "
        "decided_by, reason, created_at, decided_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        rows)
