"""Fork a run at an event: a new run holding the old one's state right after that event.

Every write commits its rows and its events with one timestamp (``now``), in seq
order, so "right after event N" is "every row written at or before event N's time":
tasks, finished steps, messages, compactions, notes, plans and approvals of the run
up to then are copied under new ids (agents become ``fork/role``), and everything
later is left out. What the rows no longer show, a task's state at that point, is
read off the event log (its last ``task.*`` event: ``fork_replay``, the rules both
backends share). Resuming the fork replays the
copied steps from its journal and runs the rest anew.

The fork point is widened to the end of its write (a task's end reports its step,
its handoffs and its completion together): a state in the middle of one commit
never existed. The copy is set-based SQL over a temporary id map, so its cost is
the rows copied, not Python per row. The source run is only read.
"""

from __future__ import annotations

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
from orchestra.store.sqlite import entries as _entries
from orchestra.store.sqlite.txn import Conn, Txn

_RUN = "SELECT pipeline, input, last_seq, version FROM runs WHERE id = ?"
# the event itself, or the last one before it still stored (a prune folds token deltas,
# which change no state: forking right after one is forking right after the event before)
_AT = "SELECT seq, at FROM events WHERE run_id = ? AND seq <= ? ORDER BY seq DESC LIMIT 1"
_SAME_WRITE = "SELECT seq, at FROM events WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT 256"
_TASK_EVENTS = f"""
SELECT kind, json_extract(data, '$.task'), json_extract(data, '$.retries'),
       json_extract(data, '$.approval')
FROM events WHERE run_id = ?1 AND seq <= ?2
  AND kind IN ({REPLAYED_KINDS_SQL})
ORDER BY seq"""
_MAP = """
CREATE TEMP TABLE IF NOT EXISTS fork_ids (
    old TEXT PRIMARY KEY, new TEXT NOT NULL, status TEXT, claims INTEGER, retries INTEGER
) WITHOUT ROWID"""
_INSERT_MAP = "INSERT INTO fork_ids VALUES (?, ?, ?, ?, ?)"


def _agent(column: str) -> str:
    """SQL: the agent id ``column`` with the source run's prefix (?1/) made the fork's (?2/)."""
    return (f"CASE WHEN substr({column}, 1, length(?1) + 1) = ?1 || '/' "
            f"THEN ?2 || substr({column}, length(?1) + 1) ELSE {column} END")


def _mapped(expr: str) -> str:
    """SQL: the fork's id for the id ``expr`` names (itself when it names nothing copied)."""
    return f"COALESCE((SELECT new FROM fork_ids WHERE old = {expr}), {expr})"


# ?1 source run, ?2 fork, ?3 the fork point's time, ?4 now
_COPY_TASKS = f"""
INSERT INTO tasks (id, run_id, role, input, status, attempt, retries, max_attempts, not_before,
    result, error, parent_id, cause, "key", created_at, updated_at, from_agent, handoff_note,
    retry_attempt)
SELECT m.new, ?2, t.role, t.input, m.status, m.claims, m.retries, t.max_attempts,
    CASE WHEN m.status IN ('completed', 'failed', 'cancelled') THEN t.not_before ELSE 0 END,
    CASE WHEN m.status = 'completed' THEN COALESCE(t.result,
        (SELECT c.content FROM messages c WHERE c.rowid = t.result_msg)) END,
    CASE WHEN m.status = 'failed' THEN t.error END,
    (SELECT p.new FROM fork_ids p WHERE p.old = t.parent_id),
    CASE WHEN t.cause LIKE 'task:%' THEN 'task:' || {_mapped("substr(t.cause, 6)")}
         ELSE t.cause END,
    t."key", t.created_at, CASE WHEN m.status IN ('completed', 'failed', 'cancelled')
        THEN t.updated_at ELSE ?4 END, {_agent("t.from_agent")}, t.handoff_note,
    m.claims + 1
FROM fork_ids m JOIN tasks t ON t.id = m.old WHERE m.status IS NOT NULL"""
_COPY_STEPS = """
INSERT INTO steps (task_id, retry, step, kind, name, input_digest, status, output, error,
    attempts, tokens_in, tokens_out, cost, started_at, finished_at)
SELECT m.new, s.retry, s.step, s.kind, s.name, s.input_digest, s.status,
    replace(s.output, '"text_agent":"' || ?1 || '/', '"text_agent":"' || ?2 || '/'),
    s.error, s.attempts, s.tokens_in, s.tokens_out, s.cost, s.started_at, s.finished_at
FROM fork_ids m JOIN steps s ON s.task_id = m.old
WHERE m.status IS NOT NULL AND s.status IN ('completed', 'failed') AND s.finished_at <= ?3"""
_COPY_AGENTS = f"""
INSERT INTO agents (id, run_id, role, created_at)
SELECT {_agent("id")}, ?2, role, created_at FROM agents WHERE run_id = ?1 AND created_at <= ?3"""
_COPY_MESSAGES = f"""
INSERT INTO messages (agent_id, seq, task_id, role, content, tool_calls, tool_call_id, name,
    created_at)
SELECT {_agent("m.agent_id")}, m.seq, {_mapped("m.task_id")}, m.role, m.content, m.tool_calls,
    m.tool_call_id, m.name, m.created_at
FROM agents a JOIN messages m ON m.agent_id = a.id
WHERE a.run_id = ?1 AND m.created_at <= ?3 ORDER BY m.agent_id, m.seq"""
_COPY_COMPACTIONS = f"""
INSERT INTO compactions (agent_id, first_seq, last_seq, summary, task_id, step, created_at)
SELECT {_agent("c.agent_id")}, c.first_seq, c.last_seq, c.summary, {_mapped("c.task_id")},
    c.step, c.created_at
FROM agents a JOIN compactions c ON c.agent_id = a.id
WHERE a.run_id = ?1 AND c.created_at <= ?3 ORDER BY c.id"""
_COPY_NOTES = f"""
INSERT INTO notes (run_id, author, tags, body, created_at, scope)
SELECT ?2, {_agent("author")}, tags, body, created_at, scope FROM notes
WHERE run_id = ?1 AND created_at <= ?3 ORDER BY id"""
_COPY_PLANS = f"""
INSERT INTO plans (run_id, version, author, body, created_at)
SELECT ?2, version, {_agent("author")}, body, created_at FROM plans
WHERE run_id = ?1 AND created_at <= ?3"""
# an approval decided after the fork point is pending in the fork
_COPY_APPROVALS = """
INSERT INTO approvals (id, run_id, task_id, retry, step, tool, arguments, status, decided_by,
    reason, created_at, decided_at)
SELECT a.new, ?2, t.new, p.retry, p.step, p.tool, p.arguments,
    CASE WHEN p.decided_at <= ?3 THEN p.status ELSE 'pending' END,
    CASE WHEN p.decided_at <= ?3 THEN p.decided_by END,
    CASE WHEN p.decided_at <= ?3 THEN p.reason END, p.created_at,
    CASE WHEN p.decided_at <= ?3 THEN p.decided_at END
FROM fork_ids a JOIN approvals p ON p.id = a.old JOIN fork_ids t ON t.old = p.task_id
WHERE a.status IS NULL AND t.status IS NOT NULL"""
# Ids are random hex and agent ids start with '"<run>/': a plain text replace rewrites the
# ids an event names without parsing and re-serializing every event's JSON.
_COPY_EVENTS = """
INSERT INTO events (run_id, seq, kind, data, at)
SELECT ?2, e.seq, e.kind, replace(CASE WHEN t.old IS NULL AND a.old IS NULL THEN e.data
        ELSE replace(replace(e.data, COALESCE(t.old, '"'), COALESCE(t.new, '"')),
                     COALESCE(a.old, '"'), COALESCE(a.new, '"')) END,
    '"' || ?1 || '/', '"' || ?2 || '/'), e.at
FROM events e
LEFT JOIN fork_ids t ON e.data LIKE '%"task"%' AND t.old = CASE
    WHEN substr(e.data, 1, 9) = '{"task":"' AND substr(e.data, 26, 1) = '"'
    THEN substr(e.data, 10, 16)  -- most events start with their task's id: no JSON parse
    ELSE json_extract(e.data, '$.task') END
LEFT JOIN fork_ids a ON e.data LIKE '%"approval"%'
    AND a.old = json_extract(e.data, '$.approval')
WHERE e.run_id = ?1 AND e.seq <= ?5"""
_TOTALS = """
UPDATE runs SET (tokens_in, tokens_out, cost, steps) = (
    SELECT COALESCE(SUM(s.tokens_in), 0), COALESCE(SUM(s.tokens_out), 0),
           COALESCE(SUM(s.cost), 0), COUNT(s.task_id)
    FROM tasks t JOIN steps s ON s.task_id = t.id WHERE t.run_id = ?1)
WHERE id = ?1"""


async def _end_of_write(conn: Conn, run_id: str, seq: int, at: float) -> int:
    """The last seq committed by the same write as ``seq`` (events of one write share ``at``)."""
    return end_of_write(seq, at, (await conn.execute(_SAME_WRITE, (run_id, seq))).fetchall())


async def _state_at(conn: Conn, run_id: str, end: int) -> tuple[list[IdRow], str | None]:
    """The id map's rows and the run's terminal status at ``end`` (``fork_replay.state_at``)."""
    return state_at(await conn.execute(_TASK_EVENTS, (run_id, end)))


async def fork_run(tx: Txn, run_id: str, at_seq: int, fork_id: str | None, input: JSON) -> Run:
    """Create the fork of ``run_id`` right after event ``at_seq`` (widened to the end of
    its write); ``input`` replaces the run's input when not None (e.g. the models the
    fork runs with). Returns the fork, ``pending`` unless it was finished by then."""
    row = (await tx.execute(_RUN, (run_id,))).fetchone()
    if row is None:
        raise NotFoundError(f"run {run_id!r} does not exist")
    pipeline, input_text, last_seq, version = row
    fork_id = fork_id_for(run_id, at_seq, last_seq, fork_id)
    if (await tx.execute("SELECT 1 FROM runs WHERE id = ?", (fork_id,))).fetchone():
        raise fork_exists(fork_id)
    found = (await tx.execute(_AT, (run_id, at_seq))).fetchone()
    if found is None:
        raise NotFoundError(f"run {run_id!r} has no events left: a prune is deleting it")
    at_seq, at = found
    end = await _end_of_write(tx.conn, run_id, at_seq, at)
    ids, run_status = await _state_at(tx.conn, run_id, end)
    status = fork_status(ids, run_status)
    run_input = input_text if input is None else tx.enc.json(input, f"input of run {fork_id}")
    (await tx.execute("INSERT INTO runs (id, pipeline, input, status, created_at, updated_at, "
                 "last_seq, version) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                 (fork_id, pipeline, run_input, status, tx.now, tx.now, end + 1, version)))
    await tx.execute(_MAP)
    await tx.execute("DELETE FROM fork_ids")
    await tx.executemany(_INSERT_MAP, ids)
    args = (run_id, fork_id, at, tx.now, end)
    for statement in (_COPY_TASKS, _COPY_STEPS, _COPY_AGENTS, _COPY_MESSAGES, _COPY_COMPACTIONS,
                      _COPY_NOTES, _COPY_PLANS, _COPY_APPROVALS, _COPY_EVENTS):
        await tx.execute(statement, args[:_params(statement)])
    await _entries.fork_entries(tx, run_id, fork_id, at)
    (await tx.execute("INSERT INTO events (run_id, seq, kind, data, at) VALUES (?, ?, ?, ?, ?)",
                 (fork_id, end + 1, "run.forked",
                  tx.enc.json({"from": run_id, "at": end}, "event data"), tx.now)))
    await tx.execute(_TOTALS, (fork_id,))
    await tx.execute("DELETE FROM fork_ids")
    return _rows.run((await tx.execute(f"SELECT {_rows.RUN_COLS} FROM runs WHERE id = ?",
                                  (fork_id,))).fetchone())


def _params(statement: str) -> int:
    """How many of (?1 source, ?2 fork, ?3 time, ?4 tx.now, ?5 end) ``statement`` uses."""
    return max(n for n in range(1, 6) if f"?{n}" in statement)
