"""The PostgreSQL schema's history: the scripts that brought each version to the next,
as SQLite's ``sqlite/migrations.py``; v5 and v6 (the step's server-side functions) are
long enough to have files of their own (``step_sql``, ``step_sql_v6``).

Never edited once released: a database at version ``i`` runs scripts ``i + 1`` onwards.
"""

from __future__ import annotations

from orchestra._types import MESSAGE_ROLES, STEP_KINDS
from orchestra.store.postgres.migration_entries import V8
from orchestra.store.postgres.migration_note_scopes import V11
from orchestra.store.postgres.step_sql import V5
from orchestra.store.postgres.step_sql_v6 import V6
from orchestra.store.postgres.step_sql_v10 import V10
from orchestra.store.postgres.versions import V9


def _one_of(values: tuple[str, ...]) -> str:
    return "(" + ", ".join(f"'{v}'" for v in values) + ")"


# v1's status list, as released (``paused`` came in v3): a script never changes
_STATUS = "CHECK (status IN ('pending', 'running', 'waiting', 'completed', 'failed', 'cancelled'))"

V1 = f"""
CREATE TABLE orchestra_schema (
    id integer PRIMARY KEY CHECK (id = 1),
    app text NOT NULL,
    version integer NOT NULL
);
CREATE TABLE runs (
    id text PRIMARY KEY,
    pipeline text NOT NULL,
    input text NOT NULL,
    status text NOT NULL {_STATUS},
    created_at double precision NOT NULL,
    updated_at double precision NOT NULL,
    error text,
    tokens_in bigint NOT NULL DEFAULT 0,
    tokens_out bigint NOT NULL DEFAULT 0,
    cost double precision NOT NULL DEFAULT 0,
    steps bigint NOT NULL DEFAULT 0,
    -- the per-run event counter: taken in the transaction that appends the event
    last_seq bigint NOT NULL DEFAULT 0
);
CREATE INDEX runs_created ON runs (created_at, id);
CREATE TABLE tasks (
    id text PRIMARY KEY,
    position bigserial NOT NULL,
    run_id text NOT NULL REFERENCES runs (id),
    role text NOT NULL,
    input text NOT NULL,
    status text NOT NULL {_STATUS},
    attempt integer NOT NULL DEFAULT 0,
    retries integer NOT NULL DEFAULT 0,
    max_attempts integer NOT NULL DEFAULT 3,
    lease_owner text,
    lease_expires_at double precision,
    not_before double precision NOT NULL DEFAULT 0,
    result text,
    error text,
    parent_id text,
    cause text,
    "key" text,
    from_agent text,
    handoff_note text,
    created_at double precision NOT NULL,
    updated_at double precision NOT NULL
);
CREATE UNIQUE INDEX tasks_key ON tasks (run_id, "key") WHERE "key" IS NOT NULL;
CREATE INDEX tasks_run ON tasks (run_id, status);
-- the claim queue: pending tasks only, oldest first (claims walk it with SKIP LOCKED)
CREATE INDEX tasks_queue ON tasks (created_at, position) WHERE status = 'pending';
CREATE INDEX tasks_leased ON tasks (lease_expires_at) WHERE status = 'running';
CREATE VIEW handoffs AS
SELECT substr(cause, 9) AS id, run_id, from_agent, role AS to_role, input AS payload,
    handoff_note AS note, id AS task_id, created_at, position
FROM tasks WHERE from_agent IS NOT NULL;
CREATE TABLE plans (
    run_id text NOT NULL REFERENCES runs (id),
    version integer NOT NULL,
    author text NOT NULL,
    body text NOT NULL,
    created_at double precision NOT NULL,
    PRIMARY KEY (run_id, version)
);
CREATE TABLE notes (
    id bigserial PRIMARY KEY,
    run_id text NOT NULL REFERENCES runs (id),
    author text NOT NULL,
    tags text NOT NULL,
    body text NOT NULL,
    created_at double precision NOT NULL,
    words tsvector GENERATED ALWAYS AS (to_tsvector('simple'::regconfig, body || ' ' || tags))
        STORED
);
CREATE INDEX notes_run ON notes (run_id, id);
CREATE INDEX notes_words ON notes USING gin (words);
CREATE TABLE agents (
    id text PRIMARY KEY,
    run_id text NOT NULL REFERENCES runs (id),
    role text NOT NULL,
    created_at double precision NOT NULL,
    -- the agent's message counter: appending n messages adds n in the same transaction
    last_seq bigint NOT NULL DEFAULT 0
);
CREATE INDEX agents_run ON agents (run_id);
CREATE TABLE messages (
    agent_id text NOT NULL REFERENCES agents (id),
    seq bigint NOT NULL,
    task_id text,
    role text NOT NULL CHECK (role IN {_one_of(MESSAGE_ROLES)}),
    content text NOT NULL,
    tool_calls text,
    tool_call_id text,
    name text,
    created_at double precision NOT NULL,
    PRIMARY KEY (agent_id, seq)
);
CREATE TABLE compactions (
    id bigserial PRIMARY KEY,
    agent_id text NOT NULL REFERENCES agents (id),
    first_seq bigint NOT NULL,
    last_seq bigint NOT NULL,
    summary text NOT NULL,
    task_id text,
    step integer,
    created_at double precision NOT NULL
);
CREATE INDEX compactions_agent ON compactions (agent_id, id);
CREATE TABLE steps (
    task_id text NOT NULL REFERENCES tasks (id),
    retry integer NOT NULL,
    step integer NOT NULL,
    kind text NOT NULL CHECK (kind IN {_one_of(STEP_KINDS)}),
    name text NOT NULL,
    input_digest text NOT NULL,
    status text NOT NULL CHECK (status IN ('started', 'completed', 'failed')),
    output text,
    error text,
    attempts integer NOT NULL DEFAULT 1,
    tokens_in bigint NOT NULL DEFAULT 0,
    tokens_out bigint NOT NULL DEFAULT 0,
    cost double precision NOT NULL DEFAULT 0,
    started_at double precision NOT NULL,
    finished_at double precision,
    PRIMARY KEY (task_id, retry, step)
);
CREATE TABLE approvals (
    id text PRIMARY KEY,
    position bigserial NOT NULL,
    run_id text NOT NULL REFERENCES runs (id),
    task_id text NOT NULL REFERENCES tasks (id),
    retry integer NOT NULL,
    step integer NOT NULL,
    tool text NOT NULL,
    arguments text NOT NULL,
    status text NOT NULL CHECK (status IN ('pending', 'approved', 'denied')),
    decided_by text,
    reason text,
    created_at double precision NOT NULL,
    decided_at double precision,
    UNIQUE (task_id, retry, step)
);
CREATE INDEX approvals_run ON approvals (run_id, status);
CREATE TABLE events (
    run_id text NOT NULL REFERENCES runs (id),
    seq bigint NOT NULL,
    kind text NOT NULL,
    data text NOT NULL,
    at double precision NOT NULL,
    PRIMARY KEY (run_id, seq)
);
-- followers LISTEN on this channel; PostgreSQL delivers at commit, once per run and
-- transaction (identical notifications of one transaction are folded into one)
CREATE FUNCTION orchestra_event_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('orchestra_events', NEW.run_id);
    RETURN NULL;
END $$;
CREATE TRIGGER events_notify AFTER INSERT ON events
    FOR EACH ROW EXECUTE FUNCTION orchestra_event_notify();
"""

# v2 (issue 11): which processes serve which run (renewed like a lease, on the
# database's clock), and steps a cancel stopped are recorded as cancelled.
V2 = """
CREATE TABLE run_servers (
    run_id text NOT NULL REFERENCES runs (id),
    owner text NOT NULL,
    seen_at double precision NOT NULL,
    expires_at double precision NOT NULL,
    PRIMARY KEY (run_id, owner)
);
ALTER TABLE steps DROP CONSTRAINT steps_status_check;
ALTER TABLE steps ADD CONSTRAINT steps_status_check
    CHECK (status IN ('started', 'completed', 'failed', 'cancelled'));
"""

# v3 (issue 16): a run a cap stopped is ``paused`` (resumable), not ``failed``
V3 = """
ALTER TABLE runs DROP CONSTRAINT runs_status_check;
ALTER TABLE runs ADD CONSTRAINT runs_status_check CHECK (status IN
    ('pending', 'running', 'waiting', 'completed', 'failed', 'cancelled', 'paused'));
"""

# v4 (issue 13): the attempt that began each task's current retry (a claim journals the
# retry's first step; each later claim of the retry is a reissue of it). A task met
# mid-retry takes its current attempt as that start.
V4 = """
ALTER TABLE tasks ADD COLUMN retry_attempt integer NOT NULL DEFAULT 1;
UPDATE tasks SET retry_attempt = CASE WHEN status = 'pending' THEN attempt + 1 ELSE attempt END
WHERE attempt > 0;
"""

# v5 (issue 25): a step's writes as server-side functions (``step_sql``): one round trip
# v6 (issue 25): fewer statements inside those functions; a run's status in one (``step_sql_v6``)
# v7: the live runs in creation order, for a worker's look (``servers.claimable_runs``),
# which grouped every claimable task by run (25 ms a look with 40,000 tasks pending)
V7 = """
CREATE INDEX runs_live ON runs (created_at, id)
WHERE status IN ('pending', 'running', 'waiting');
"""
# v8 (``migration_entries``): typed board entries and their consumptions
# v9 (issue 49, ``versions``): the version of the code each run runs on
# v10 (issue 49, ``step_sql_v10``): the claim functions filter on the claimer's versions
# v11 (issue 48, ``migration_note_scopes``): a note has a scope, as an entry does
MIGRATIONS: tuple[str, ...] = (V1, V2, V3, V4, V5, V6, V7, V8, V9, V10, V11)
"""Script ``i`` (0-based) takes the schema from version ``i`` to ``i + 1``. Append only."""
