"""Fork a run at an event, on PostgreSQL: the same rules as SQLite's ``sqlite/fork.py``
(``fork_replay``: the fork point, each task's state then).

"Right after event N" is every row written at or before event N's time (a write's
rows and events share its transaction's ``now()``), widened to the end of that
write; a task's state then is read off the event log. The id map travels as arrays
(``unnest``) in each statement, so the copy is set-based SQL with no temporary table.
"""

from __future__ import annotations

import asyncpg

from orchestra._errors import NotFoundError
from orchestra._types import JSON, Run
from orchestra.store import rows as _rows
from orchestra.store.fork_replay import (
    REPLAYED_KINDS_SQL,
    IdRow,
    end_of_write,
    fork_exists,
    fork_id_for,
    fork_status,
    state_at,
)
from orchestra.store.postgres import entries as _entries
from orchestra.store.postgres.events import whole
from orchestra.store.postgres.txn import Txn

_RUN = "SELECT pipeline, input, last_seq, version FROM runs WHERE id = $1"
# the event itself, or the last one before it still stored (a prune folds token deltas,
# which change no state: forking right after one is forking right after the event before)
_AT = "SELECT seq, at FROM events WHERE run_id = $1 AND seq <= $2 ORDER BY seq DESC LIMIT 1"
_SAME_WRITE = "SELECT seq, at FROM events WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT 256"
_TASK_EVENTS = f"""
SELECT kind, data::jsonb ->> 'task', data::jsonb -> 'retries', data::jsonb ->> 'approval'
FROM events WHERE run_id = $1 AND seq <= $2
  AND kind IN ({REPLAYED_KINDS_SQL})
ORDER BY seq"""


def _map(first: int) -> str:
    """The id map as a CTE over five array parameters, ``$first`` ... ``$first+4``."""
    p = [f"${first + i}" for i in range(5)]
    return (f"WITH fork_ids AS (SELECT * FROM unnest({p[0]}::text[], {p[1]}::text[], "
            f"{p[2]}::text[], {p[3]}::int[], {p[4]}::int[]) AS m(old, new, status, claims, "
            "retries)), "
            "args AS (SELECT $1::text AS source, $2::text AS fork) ")  # types $1, $2 if unused


def _agent(column: str) -> str:
    """SQL: the agent id ``column`` with the source run's prefix ($1/) made the fork's ($2/)."""
    return (f"CASE WHEN left({column}, length($1::text) + 1) = $1::text || '/' "
            f"THEN $2::text || substr({column}, length($1::text) + 1) ELSE {column} END")


def _mapped(expr: str) -> str:
    return f"COALESCE((SELECT new FROM fork_ids WHERE old = {expr}), {expr})"


# $1 source run, $2 fork, $3 the fork point's time, $4 now / end, then the map
_COPY_TASKS = _map(4) + f"""
INSERT INTO tasks (id, run_id, role, input, status, attempt, retries, max_attempts, not_before,
    result, error, parent_id, cause, "key", created_at, updated_at, from_agent, handoff_note,
    retry_attempt)
SELECT m.new, $2, t.role, t.input, m.status, m.claims, m.retries, t.max_attempts,
    CASE WHEN m.status IN ('completed', 'failed', 'cancelled') THEN t.not_before ELSE 0 END,
    CASE WHEN m.status = 'completed' THEN t.result END,
    CASE WHEN m.status = 'failed' THEN t.error END,
    (SELECT p.new FROM fork_ids p WHERE p.old = t.parent_id),
    CASE WHEN t.cause LIKE 'task:%' THEN 'task:' || {_mapped("substr(t.cause, 6)")}
         ELSE t.cause END,
    t."key", t.created_at, CASE WHEN m.status IN ('completed', 'failed', 'cancelled')
        THEN t.updated_at ELSE $3 END, {_agent("t.from_agent")}, t.handoff_note,
    m.claims + 1
FROM fork_ids m JOIN tasks t ON t.id = m.old WHERE m.status IS NOT NULL
ORDER BY t.position"""
_COPY_STEPS = _map(4) + """
INSERT INTO steps (task_id, retry, step, kind, name, input_digest, status, output, error,
    attempts, tokens_in, tokens_out, cost, started_at, finished_at)
SELECT m.new, s.retry, s.step, s.kind, s.name, s.input_digest, s.status, s.output,
    s.error, s.attempts, s.tokens_in, s.tokens_out, s.cost, s.started_at, s.finished_at
FROM fork_ids m JOIN steps s ON s.task_id = m.old
WHERE m.status IS NOT NULL AND s.status IN ('completed', 'failed') AND s.finished_at <= $3"""
_COPY_AGENTS = f"""
INSERT INTO agents (id, run_id, role, created_at, last_seq)
SELECT {_agent("a.id")}, $2, a.role, a.created_at,
    (SELECT COALESCE(MAX(m.seq), 0) FROM messages m
     WHERE m.agent_id = a.id AND m.created_at <= $3)
FROM agents a WHERE a.run_id = $1 AND a.created_at <= $3"""
_COPY_MESSAGES = _map(4) + f"""
INSERT INTO messages (agent_id, seq, task_id, role, content, tool_calls, tool_call_id, name,
    created_at)
SELECT {_agent("m.agent_id")}, m.seq, {_mapped("m.task_id")}, m.role, m.content, m.tool_calls,
    m.tool_call_id, m.name, m.created_at
FROM agents a JOIN messages m ON m.agent_id = a.id
WHERE a.run_id = $1 AND m.created_at <= $3"""
_COPY_COMPACTIONS = _map(4) + f"""
INSERT INTO compactions (agent_id, first_seq, last_seq, summary, task_id, step, created_at)
SELECT {_agent("c.agent_id")}, c.first_seq, c.last_seq, c.summary, {_mapped("c.task_id")},
    c.step, c.created_at
FROM agents a JOIN compactions c ON c.agent_id = a.id
WHERE a.run_id = $1 AND c.created_at <= $3 ORDER BY c.id"""
_COPY_NOTES = f"""
INSERT INTO notes (run_id, author, tags, body, created_at, scope)
SELECT $2, {_agent("author")}, tags, body, created_at, scope FROM notes
WHERE run_id = $1 AND created_at <= $3 ORDER BY id"""
_COPY_PLANS = f"""
INSERT INTO plans (run_id, version, author, body, created_at)
SELECT $2, version, {_agent("author")}, body, created_at FROM plans
WHERE run_id = $1 AND created_at <= $3"""
_COPY_APPROVALS = _map(4) + """
INSERT INTO approvals (id, run_id, task_id, retry, step, tool, arguments, status, decided_by,
    reason, created_at, decided_at)
SELECT a.new, $2, t.new, p.retry, p.step, p.tool, p.arguments,
    CASE WHEN p.decided_at <= $3 THEN p.status ELSE 'pending' END,
    CASE WHEN p.decided_at <= $3 THEN p.decided_by END,
    CASE WHEN p.decided_at <= $3 THEN p.reason END, p.created_at,
    CASE WHEN p.decided_at <= $3 THEN p.decided_at END
FROM fork_ids a JOIN approvals p ON p.id = a.old JOIN fork_ids t ON t.old = p.task_id
WHERE a.status IS NULL AND t.status IS NOT NULL ORDER BY p.position"""
# ids are random hex and agent ids start with '"<run>/': a text replace rewrites them
_COPY_EVENTS = _map(4) + """
INSERT INTO events (run_id, seq, kind, data, at)
SELECT $2, e.seq, e.kind, replace(CASE WHEN t.old IS NULL AND a.old IS NULL THEN e.data
        ELSE replace(replace(e.data, COALESCE(t.old, '"'), COALESCE(t.new, '"')),
                     COALESCE(a.old, '"'), COALESCE(a.new, '"')) END,
    '"' || $1 || '/', '"' || $2 || '/'), e.at
FROM events e
LEFT JOIN fork_ids t ON t.old = e.data::jsonb ->> 'task'
LEFT JOIN fork_ids a ON a.old = e.data::jsonb ->> 'approval'
WHERE e.run_id = $1 AND e.seq <= $3"""
_TOTALS = """
UPDATE runs SET (tokens_in, tokens_out, cost, steps) = (
    SELECT COALESCE(SUM(s.tokens_in), 0), COALESCE(SUM(s.tokens_out), 0),
           COALESCE(SUM(s.cost), 0), COUNT(s.task_id)
    FROM tasks t JOIN steps s ON s.task_id = t.id WHERE t.run_id = $1)
WHERE id = $1"""


async def _end_of_write(c: asyncpg.Connection, run_id: str, seq: int, at: float) -> int:
    """The last seq committed by the same write as ``seq`` (events of one write share ``at``)."""
    following = [(r[0], r[1]) for r in await c.fetch(_SAME_WRITE, run_id, seq)]
    return int(end_of_write(seq, at, following))


async def _state_at(c: asyncpg.Connection, run_id: str, end: int
                    ) -> tuple[list[IdRow], str | None]:
    """The id map's rows and the run's terminal status at ``end`` (``fork_replay.state_at``;
    ``retries`` arrives as JSON text here)."""
    return state_at((kind, task_id, _int(retries), approval)
                    for kind, task_id, retries, approval in await c.fetch(_TASK_EVENTS, run_id,
                                                                          end))


def _int(text: str | None) -> int | None:
    return None if text is None or not text.isdigit() else int(text)


async def fork_run(tx: Txn, run_id: str, at_seq: int, fork_id: str | None, input: JSON) -> Run:
    """Create the fork of ``run_id`` right after event ``at_seq`` (widened to its write's end)."""
    row = await tx.fetchrow(_RUN, run_id)
    if row is None:
        raise NotFoundError(f"run {run_id!r} does not exist")
    pipeline, input_text, last_seq, version = row
    fork_id = fork_id_for(run_id, at_seq, last_seq, fork_id)
    if await tx.fetchval("SELECT 1 FROM runs WHERE id = $1", fork_id):
        raise fork_exists(fork_id)
    found = await tx.fetchrow(_AT, run_id, at_seq)
    if found is None:
        raise NotFoundError(f"run {run_id!r} has no events left: a prune is deleting it")
    at_seq, at = found
    end = await _end_of_write(tx.conn, run_id, at_seq, at)
    ids, run_status = await _state_at(tx.conn, run_id, end)
    status = fork_status(ids, run_status)
    run_input = input_text if input is None else tx.enc.json(input, f"input of run {fork_id}")
    await tx.execute("INSERT INTO runs (id, pipeline, input, status, created_at, updated_at, "
                     "last_seq, version) VALUES ($1, $2, $3, $4, $5, $5, $6, $7)",
                     fork_id, pipeline, run_input, status, tx.now, end + 1, version)
    arrays = [list(column) for column in zip(*ids, strict=True)] if ids else [[]] * 5
    await tx.execute(_COPY_TASKS, run_id, fork_id, tx.now, *arrays)
    await tx.execute(_COPY_STEPS, run_id, fork_id, at, *arrays)
    await tx.execute(_COPY_AGENTS, run_id, fork_id, at)
    for statement in (_COPY_MESSAGES, _COPY_COMPACTIONS, _COPY_APPROVALS):
        await tx.execute(statement, run_id, fork_id, at, *arrays)
    await tx.execute(_COPY_NOTES, run_id, fork_id, at)
    await tx.execute(_COPY_PLANS, run_id, fork_id, at)
    await tx.execute(_COPY_EVENTS, run_id, fork_id, end, *arrays)
    await _entries.fork_entries(tx, run_id, fork_id, at, arrays)
    await tx.execute("INSERT INTO events (run_id, seq, kind, data, at) VALUES ($1, $2, $3, $4, $5)",
                     fork_id, end + 1, "run.forked",
                     tx.enc.json({"from": run_id, "at": end}, "event data"), tx.now)
    await tx.execute(_TOTALS, fork_id)
    return _rows.run(whole(await tx.fetchrow(f"SELECT {_rows.RUN_COLS} FROM runs WHERE id = $1",
                                             fork_id)))
