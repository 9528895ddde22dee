"""Schema v10: a step's start, and a step's end that writes nothing else, as one statement.

Kept beside ``migrations`` (which lists it) so that file stays readable; like every
script there, never edited once released.

A tool step is journaled twice: ``started``, durably, before the tool acts, then its
outcome. The general way each was a transaction of four and six statements, every one a
hop to aiosqlite's thread. Each is now ONE insert into a view whose trigger checks the
lease (refusing a stale row whole, as ``step_records`` does) and maintains ``steps``,
``agents``, the run's totals and its event log inside SQLite (``step_rows``). An event's
data is JSON the store's Python encoded; a start's event gets its ``attempt`` (known only
once the row is upserted) appended here, as its last key.
"""

from __future__ import annotations

V10 = """CREATE VIEW step_starts AS
SELECT NULL AS run_id, NULL AS task_id, NULL AS retry, NULL AS step, NULL AS kind,
    NULL AS name, NULL AS input_digest, NULL AS event, NULL AS at, NULL AS lease_owner,
    NULL AS lease_attempt;
CREATE TRIGGER step_starts_insert INSTEAD OF INSERT ON step_starts BEGIN
    SELECT RAISE(ABORT, 'orchestra: step record is stale') WHERE NOT EXISTS (
        SELECT 1 FROM tasks WHERE id = new.task_id AND run_id = new.run_id
        AND status = 'running' AND lease_owner = new.lease_owner
        AND attempt = new.lease_attempt);
    INSERT INTO steps (task_id, retry, step, kind, name, input_digest, status, attempts,
        started_at)
    VALUES (new.task_id, new.retry, new.step, new.kind, new.name, new.input_digest,
        'started', CASE WHEN new.step = 1 THEN (SELECT MAX(1, attempt - retry_attempt + 1)
            FROM tasks WHERE id = new.task_id) ELSE 1 END, new.at)
    ON CONFLICT (task_id, retry, step) DO UPDATE SET
        attempts = attempts + 1, status = 'started', kind = excluded.kind,
        name = excluded.name, input_digest = excluded.input_digest,
        started_at = excluded.started_at, output = NULL, error = NULL, finished_at = NULL
    WHERE status = 'started';
    INSERT INTO events (run_id, seq, kind, data, at)
    SELECT new.run_id, r.last_seq + 1, 'step.started', substr(new.event, 1,
        length(new.event) - 1) || ',"attempt":' || s.attempts || '}', new.at
    FROM runs r, steps s
    WHERE r.id = new.run_id AND new.event IS NOT NULL AND s.task_id = new.task_id
        AND s.retry = new.retry AND s.step = new.step AND s.status = 'started';
    UPDATE runs SET last_seq = last_seq + 1, updated_at = new.at
    WHERE id = new.run_id AND new.event IS NOT NULL AND EXISTS (
        SELECT 1 FROM steps WHERE task_id = new.task_id AND retry = new.retry
        AND step = new.step AND status = 'started');
END;
CREATE VIEW step_ends AS
SELECT NULL AS run_id, NULL AS task_id, NULL AS agent_id, NULL AS agent_role,
    NULL AS retry, NULL AS step, NULL AS kind, NULL AS name, NULL AS input_digest,
    NULL AS status, NULL AS output, NULL AS error, NULL AS tokens_in, NULL AS tokens_out,
    NULL AS cost, NULL AS event, NULL AS at, NULL AS lease_owner, NULL AS lease_attempt;
CREATE TRIGGER step_ends_insert INSTEAD OF INSERT ON step_ends BEGIN
    SELECT RAISE(ABORT, 'orchestra: step record is stale') WHERE NOT EXISTS (
        SELECT 1 FROM tasks WHERE id = new.task_id AND run_id = new.run_id
        AND status = 'running' AND lease_owner = new.lease_owner
        AND attempt = new.lease_attempt);
    SELECT RAISE(ABORT, 'orchestra: step already completed') WHERE EXISTS (
        SELECT 1 FROM steps WHERE task_id = new.task_id AND retry = new.retry
        AND step = new.step AND status = 'completed');
    INSERT OR IGNORE INTO agents (id, run_id, role, created_at)
    VALUES (new.agent_id, new.run_id, new.agent_role, new.at);
    INSERT INTO steps (task_id, retry, step, kind, name, input_digest, status, output, error,
        attempts, tokens_in, tokens_out, cost, started_at, finished_at)
    VALUES (new.task_id, new.retry, new.step, new.kind, new.name, new.input_digest,
        new.status, new.output, new.error, CASE WHEN new.step = 1 THEN (SELECT
            MAX(1, attempt - retry_attempt + 1) FROM tasks WHERE id = new.task_id) ELSE 1 END,
        new.tokens_in, new.tokens_out, new.cost, new.at, new.at)
    ON CONFLICT (task_id, retry, step) DO UPDATE SET
        kind = excluded.kind, name = excluded.name, input_digest = excluded.input_digest,
        status = excluded.status, output = excluded.output, error = excluded.error,
        tokens_in = excluded.tokens_in, tokens_out = excluded.tokens_out, cost = excluded.cost,
        finished_at = excluded.finished_at
    WHERE status != 'completed';
    INSERT INTO events (run_id, seq, kind, data, at)
    SELECT id, last_seq + 1, 'step.' || new.status, new.event, new.at FROM runs
    WHERE id = new.run_id;
    UPDATE runs SET last_seq = last_seq + 1, updated_at = new.at,
        tokens_in = tokens_in + new.tokens_in, tokens_out = tokens_out + new.tokens_out,
        cost = cost + new.cost, steps = steps + 1
    WHERE id = new.run_id;
END;
"""
