"""The schema's history: the scripts that brought each version to the next.

Never edited once released: a file at version ``i`` runs scripts ``i + 1`` onwards.
The schema as it is now is ``schema.sql``; a change is a new script here plus the
same change there.
"""

from __future__ import annotations

from orchestra.store.sqlite.migration_entries import V11
from orchestra.store.sqlite.migration_note_scopes import V13
from orchestra.store.sqlite.migration_v10 import V10
from orchestra.store.sqlite.versions import V12

_RUN_STATUSES = "('pending', 'running', 'waiting', 'completed', 'failed', 'cancelled')"

V1 = f"""
CREATE TABLE orchestra_schema (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    version INTEGER NOT NULL
);
CREATE TABLE runs (
    id TEXT PRIMARY KEY,
    pipeline TEXT NOT NULL,
    input TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN {_RUN_STATUSES}),
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    error TEXT,
    tokens_in INTEGER NOT NULL DEFAULT 0,
    tokens_out INTEGER NOT NULL DEFAULT 0,
    cost REAL NOT NULL DEFAULT 0,
    steps INTEGER NOT NULL DEFAULT 0,
    last_seq INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX runs_created ON runs (created_at);
CREATE TABLE tasks (
    id TEXT PRIMARY KEY,
    run_id TEXT NOT NULL REFERENCES runs (id),
    role TEXT NOT NULL,
    input TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN {_RUN_STATUSES}),
    attempt INTEGER NOT NULL DEFAULT 0,
    retries INTEGER NOT NULL DEFAULT 0,
    max_attempts INTEGER NOT NULL DEFAULT 3,
    lease_owner TEXT,
    lease_expires_at REAL,
    not_before REAL NOT NULL DEFAULT 0,
    result TEXT,
    error TEXT,
    parent_id TEXT,
    cause TEXT,
    "key" TEXT,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
CREATE UNIQUE INDEX tasks_key ON tasks (run_id, "key") WHERE "key" IS NOT NULL;
CREATE INDEX tasks_run ON tasks (run_id, status);
-- The claim queue: pending tasks only, oldest first. Walking it in order finds the
-- next claimable task in O(log n); an index on (status, role, not_before) would make
-- every claim sort all pending tasks by age.
CREATE INDEX tasks_queue ON tasks (created_at) WHERE status = 'pending';
CREATE INDEX tasks_leased ON tasks (run_id) WHERE status = 'running';
CREATE TABLE plans (
    run_id TEXT NOT NULL REFERENCES runs (id),
    version INTEGER NOT NULL,
    author TEXT NOT NULL,
    body TEXT NOT NULL,
    created_at REAL NOT NULL,
    PRIMARY KEY (run_id, version)
);
CREATE TABLE handoffs (
    id TEXT PRIMARY KEY,
    run_id TEXT NOT NULL REFERENCES runs (id),
    from_agent TEXT NOT NULL,
    to_role TEXT NOT NULL,
    payload TEXT NOT NULL,
    note TEXT NOT NULL,
    task_id TEXT NOT NULL REFERENCES tasks (id),
    created_at REAL NOT NULL
);
CREATE INDEX handoffs_run ON handoffs (run_id, created_at);
CREATE INDEX handoffs_task ON handoffs (task_id);
CREATE TABLE notes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL REFERENCES runs (id),
    author TEXT NOT NULL,
    tags TEXT NOT NULL,
    body TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE INDEX notes_run ON notes (run_id, id);
CREATE VIRTUAL TABLE notes_fts USING fts5 (body, tags, content = 'notes', content_rowid = 'id');
CREATE TRIGGER notes_fts_insert AFTER INSERT ON notes BEGIN
    INSERT INTO notes_fts (rowid, body, tags) VALUES (new.id, new.body, new.tags);
END;
CREATE TRIGGER notes_fts_delete AFTER DELETE ON notes BEGIN
    INSERT INTO notes_fts (notes_fts, rowid, body, tags)
    VALUES ('delete', old.id, old.body, old.tags);
END;
CREATE TRIGGER notes_fts_update AFTER UPDATE ON notes BEGIN
    INSERT INTO notes_fts (notes_fts, rowid, body, tags)
    VALUES ('delete', old.id, old.body, old.tags);
    INSERT INTO notes_fts (rowid, body, tags) VALUES (new.id, new.body, new.tags);
END;
CREATE TABLE agents (
    id TEXT PRIMARY KEY,
    run_id TEXT NOT NULL REFERENCES runs (id),
    role TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE INDEX agents_run ON agents (run_id);
-- No FTS index on messages: they are the hottest, largest table, and
-- search_messages (a LIKE scan of one agent's history) is rare. Messages and steps
-- are rowid tables: their rows are large, and measured, a rowid table plus the
-- primary-key index inserts faster than a WITHOUT ROWID table holding whole rows.
CREATE TABLE messages (
    agent_id TEXT NOT NULL REFERENCES agents (id),
    seq INTEGER NOT NULL,
    task_id TEXT,
    role TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
    content TEXT NOT NULL,
    tool_calls TEXT,
    tool_call_id TEXT,
    name TEXT,
    created_at REAL NOT NULL,
    PRIMARY KEY (agent_id, seq)
);
CREATE TABLE compactions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    agent_id TEXT NOT NULL REFERENCES agents (id),
    first_seq INTEGER NOT NULL,
    last_seq INTEGER NOT NULL,
    summary TEXT NOT NULL,
    task_id TEXT,
    step INTEGER,
    created_at REAL NOT NULL
);
CREATE INDEX compactions_agent ON compactions (agent_id, id);
CREATE TABLE steps (
    task_id TEXT NOT NULL REFERENCES tasks (id),
    retry INTEGER NOT NULL,
    step INTEGER NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('model', 'tool', 'compaction')),
    name TEXT NOT NULL,
    input_digest TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('started', 'completed', 'failed')),
    output TEXT,
    error TEXT,
    attempts INTEGER NOT NULL DEFAULT 1,
    tokens_in INTEGER NOT NULL DEFAULT 0,
    tokens_out INTEGER NOT NULL DEFAULT 0,
    cost REAL NOT NULL DEFAULT 0,
    started_at REAL NOT NULL,
    finished_at REAL,
    PRIMARY KEY (task_id, retry, step)
);
CREATE TABLE approvals (
    id TEXT PRIMARY KEY,
    run_id TEXT NOT NULL REFERENCES runs (id),
    task_id TEXT NOT NULL REFERENCES tasks (id),
    retry INTEGER NOT NULL,
    step INTEGER NOT NULL,
    tool TEXT NOT NULL,
    arguments TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'denied')),
    decided_by TEXT,
    reason TEXT,
    created_at REAL NOT NULL,
    decided_at REAL,
    UNIQUE (task_id, retry, step)
);
CREATE INDEX approvals_run ON approvals (run_id, status);
CREATE TABLE events (
    run_id TEXT NOT NULL REFERENCES runs (id),
    seq INTEGER NOT NULL,
    kind TEXT NOT NULL,
    data TEXT NOT NULL,
    at REAL NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
"""

# v2: a task result equal to its final reply points at that message instead of
# repeating it (a long-lived agent's file grows by its messages, once).
V2 = """
ALTER TABLE tasks ADD COLUMN result_msg INTEGER;
"""

# v3: a handoff is its task's row. Handoffs and tasks were 1:1 (the payload was the
# task's input, twice); a handoff table with two indexes of its own made every
# routed step write three more B-trees. ``handoffs`` stays readable as a view, and a
# handoff's id is still the one in its task's ``cause`` ("handoff:<id>").
V3 = """
ALTER TABLE tasks ADD COLUMN from_agent TEXT;
ALTER TABLE tasks ADD COLUMN handoff_note TEXT;
UPDATE tasks SET from_agent = h.from_agent, handoff_note = h.note
FROM handoffs AS h WHERE h.task_id = tasks.id;
DROP INDEX handoffs_run;
DROP INDEX handoffs_task;
DROP TABLE handoffs;
CREATE VIEW handoffs AS
SELECT substr(cause, 9) AS id, run_id, from_agent, role AS to_role, input AS payload,
    handoff_note AS note, id AS task_id, created_at, rowid AS position
FROM tasks WHERE from_agent IS NOT NULL;
"""

# v4: takeover and prompt cancel. ``run_servers`` is how the store knows a run is
# served: every process driving a run renews its row (on the store's clock, like a
# lease), so a run nobody renews is visibly orphaned. A step a cancel interrupted is
# recorded as ``cancelled`` (SQLite cannot alter a CHECK: the table is rebuilt).
V4 = """
CREATE TABLE run_servers (
    run_id TEXT NOT NULL REFERENCES runs (id),
    owner TEXT NOT NULL,
    seen_at REAL NOT NULL,
    expires_at REAL NOT NULL,
    PRIMARY KEY (run_id, owner)
) WITHOUT ROWID;
CREATE TABLE steps_v4 (
    task_id TEXT NOT NULL REFERENCES tasks (id),
    retry INTEGER NOT NULL,
    step INTEGER NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('model', 'tool', 'compaction')),
    name TEXT NOT NULL,
    input_digest TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('started', 'completed', 'failed', 'cancelled')),
    output TEXT,
    error TEXT,
    attempts INTEGER NOT NULL DEFAULT 1,
    tokens_in INTEGER NOT NULL DEFAULT 0,
    tokens_out INTEGER NOT NULL DEFAULT 0,
    cost REAL NOT NULL DEFAULT 0,
    started_at REAL NOT NULL,
    finished_at REAL,
    PRIMARY KEY (task_id, retry, step)
);
INSERT INTO steps_v4 SELECT task_id, retry, step, kind, name, input_digest, status, output,
    error, attempts, tokens_in, tokens_out, cost, started_at, finished_at FROM steps;
DROP TABLE steps;
ALTER TABLE steps_v4 RENAME TO steps;
"""

# v5: a run a cap stopped is ``paused`` (resumable), not ``failed``. SQLite cannot alter
# a CHECK: ``runs`` is rebuilt (``migrate`` turns foreign keys off around every script,
# as SQLite's own procedure for this does, so dropping the old table leaves the rows
# that point at runs alone; every run is copied, so they all point at one again).
V5 = """
CREATE TABLE runs_v5 (
    id TEXT PRIMARY KEY,
    pipeline TEXT NOT NULL,
    input TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN
        ('pending', 'running', 'waiting', 'completed', 'failed', 'cancelled', 'paused')),
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    error TEXT,
    tokens_in INTEGER NOT NULL DEFAULT 0,
    tokens_out INTEGER NOT NULL DEFAULT 0,
    cost REAL NOT NULL DEFAULT 0,
    steps INTEGER NOT NULL DEFAULT 0,
    last_seq INTEGER NOT NULL DEFAULT 0
);
INSERT INTO runs_v5 SELECT id, pipeline, input, status, created_at, updated_at, error,
    tokens_in, tokens_out, cost, steps, last_seq FROM runs;
DROP TABLE runs;
ALTER TABLE runs_v5 RENAME TO runs;
CREATE INDEX runs_created ON runs (created_at);
"""

# v6: a task's usual end is one statement, an insert into the ``step_records`` view
# whose trigger maintains the tables (``step``); ``tasks.retry_attempt``: the
# attempt that began the current retry (its first step's reissues are counted from it;
# for a task met mid-retry, its current attempt is taken as that start).
V6 = """
ALTER TABLE tasks ADD COLUMN retry_attempt INTEGER NOT NULL DEFAULT 1;
UPDATE tasks SET retry_attempt = CASE WHEN status = 'pending' THEN attempt + 1 ELSE attempt END
WHERE attempt > 0;
-- A task's end as one record (``step``): inserting into this view is the whole
-- write; its trigger maintains the tables in the same transaction. Nothing is stored
-- in the view itself. ``messages``, ``tasks`` and ``events`` are JSON
-- arrays of rows the store's Python already encoded and checked.
CREATE VIEW step_records AS
SELECT NULL AS run_id, NULL AS task_id, NULL AS agent_id, NULL AS agent_role, NULL AS retry,
    NULL AS step, NULL AS kind, NULL AS name, NULL AS input_digest, NULL AS output,
    NULL AS tokens_in, NULL AS tokens_out, NULL AS cost, NULL AS result,
    NULL AS result_is_reply, NULL AS reply_seq, NULL AS messages, NULL AS tasks,
    NULL AS events, NULL AS at;
CREATE TRIGGER step_records_insert INSTEAD OF INSERT ON step_records BEGIN
    SELECT RAISE(ABORT, 'orchestra: step already completed') WHERE EXISTS (
        SELECT 1 FROM steps WHERE task_id = new.task_id AND retry = new.retry
        AND step = new.step AND status = 'completed');
    INSERT OR IGNORE INTO agents (id, run_id, role, created_at)
    VALUES (new.agent_id, new.run_id, new.agent_role, new.at);
    INSERT INTO messages (agent_id, seq, task_id, role, content, tool_calls, tool_call_id,
        name, created_at)
    SELECT new.agent_id, new.reply_seq - json_array_length(new.messages) + m.key + 1,
        new.task_id, json_extract(m.value, '$[1]'), json_extract(m.value, '$[0]'),
        json_extract(m.value, '$[2]'), json_extract(m.value, '$[3]'),
        json_extract(m.value, '$[4]'), new.at
    FROM json_each(new.messages) AS m;
    INSERT INTO tasks (id, run_id, role, input, status, attempt, lease_owner, lease_expires_at,
        max_attempts, not_before, parent_id, cause, "key", from_agent, handoff_note,
        created_at, updated_at)
    SELECT json_extract(t.value, '$[0]'), new.run_id, json_extract(t.value, '$[1]'),
        json_extract(t.value, '$[2]'), json_extract(t.value, '$[3]'),
        json_extract(t.value, '$[4]'), json_extract(t.value, '$[5]'),
        json_extract(t.value, '$[6]'), json_extract(t.value, '$[7]'), 0, new.task_id,
        json_extract(t.value, '$[8]'), NULL, new.agent_id, json_extract(t.value, '$[9]'),
        new.at, new.at
    FROM json_each(new.tasks) AS t;
    INSERT INTO steps (task_id, retry, step, kind, name, input_digest, status, output, error,
        attempts, tokens_in, tokens_out, cost, started_at, finished_at)
    VALUES (new.task_id, new.retry, new.step, new.kind, new.name, new.input_digest,
        'completed', new.output, NULL, CASE WHEN new.step = 1 THEN (SELECT
            MAX(1, attempt - retry_attempt + 1) FROM tasks WHERE id = new.task_id) ELSE 1 END,
        new.tokens_in, new.tokens_out, new.cost, new.at, new.at)
    ON CONFLICT (task_id, retry, step) DO UPDATE SET
        kind = excluded.kind, name = excluded.name, input_digest = excluded.input_digest,
        status = excluded.status, output = excluded.output, error = excluded.error,
        tokens_in = excluded.tokens_in, tokens_out = excluded.tokens_out, cost = excluded.cost,
        finished_at = excluded.finished_at
    WHERE status != 'completed';
    UPDATE tasks SET status = 'completed', result = new.result, error = NULL,
        lease_owner = NULL, lease_expires_at = NULL, updated_at = new.at,
        result_msg = CASE WHEN new.result_is_reply THEN (SELECT rowid FROM messages
            WHERE agent_id = new.agent_id AND seq = new.reply_seq) END
    WHERE id = new.task_id;
    INSERT INTO events (run_id, seq, kind, data, at)
    SELECT new.run_id, (SELECT last_seq FROM runs WHERE id = new.run_id) + e.key + 1,
        json_extract(e.value, '$[0]'), json_extract(e.value, '$[1]'), new.at
    FROM json_each(new.events) AS e;
    UPDATE runs SET last_seq = last_seq + json_array_length(new.events), updated_at = new.at,
        tokens_in = tokens_in + new.tokens_in, tokens_out = tokens_out + new.tokens_out,
        cost = cost + new.cost, steps = steps + 1
    WHERE id = new.run_id;
END;
"""

# v7: the step record checks what its write assumed (the task's run and lease; no pending
# work in the run when the write claims; the agent's last message seq): a write that was
# wrong about one of them writes nothing. So a process that already knows them writes a
# task's usual end as that one statement, reading nothing first (``step``). The view
# and trigger are v6's (the frozen text above) with the three columns and the check.
_V6_RECORDS = V6[V6.index("CREATE VIEW step_records"):]
V7 = "DROP VIEW step_records;\n" + _V6_RECORDS.replace(
    "NULL AS events, NULL AS at;",
    "NULL AS events, NULL AS at, NULL AS lease_owner, NULL AS lease_attempt,\n"
    "    NULL AS claims;").replace(
    "INSTEAD OF INSERT ON step_records BEGIN\n", """INSTEAD OF INSERT ON step_records BEGIN
    SELECT RAISE(ABORT, 'orchestra: step record is stale') WHERE NOT EXISTS (
            SELECT 1 FROM tasks WHERE id = new.task_id AND run_id = new.run_id
            AND status = 'running' AND lease_owner = new.lease_owner
            AND attempt = new.lease_attempt)
        OR (new.claims AND EXISTS (
            SELECT 1 FROM tasks WHERE run_id = new.run_id AND status = 'pending'))
        OR (json_array_length(new.messages) > 0 AND new.reply_seq
            - json_array_length(new.messages) != (
            SELECT COALESCE(MAX(seq), 0) FROM messages WHERE agent_id = new.agent_id));
""")

# v8: a run's usual status change is one statement too (``runs.status_row``): a worker's
# writes are then rows of one statement per batch, and its write lock is never held
# across the event loop's turns for them.
V8 = """CREATE VIEW run_status_changes AS
SELECT NULL AS run_id, NULL AS status, NULL AS only_from, NULL AS at;
CREATE TRIGGER run_status_changes_insert INSTEAD OF INSERT ON run_status_changes BEGIN
    SELECT RAISE(ABORT, 'orchestra: run status change refused') WHERE NOT EXISTS (
        SELECT 1 FROM runs WHERE id = new.run_id AND (new.only_from IS NULL
            OR status IN (SELECT value FROM json_each(new.only_from))));
    INSERT INTO events (run_id, seq, kind, data, at)
    SELECT id, last_seq + 1, 'run.' || new.status,
        json_object('status', new.status, 'previous', status, 'error', NULL), new.at
    FROM runs WHERE id = new.run_id;
    UPDATE runs SET status = new.status, error = NULL, updated_at = new.at,
        last_seq = last_seq + 1
    WHERE id = new.run_id;
END;
"""

# v9: the live runs in creation order, for a worker's look (``servers.claimable_runs``):
# it walked every task of the file (and so slowed as the file grew); now it walks the
# live runs and asks each for one claimable task
V9 = """CREATE INDEX runs_live ON runs (created_at)
WHERE status IN ('pending', 'running', 'waiting');
"""

# v10 (``migration_v10``): a step's start, and a step's end that writes nothing else, are
# one statement each (``step_rows``): a tool step's journaling is two hops, not fourteen.

# v11 (``migration_entries``): typed board entries and their consumptions.
# v12 (issue 49, ``versions``): the version of the code each run runs on

MIGRATIONS: tuple[str, ...] = (V1, V2, V3, V4, V5, V6, V7, V8, V9, V10, V11, V12,
                                V13)
"""Script ``i`` (0-based) takes the schema from version ``i`` to ``i + 1``. Append only;
``schema.sql`` must always equal their result (``tests/store/test_schema.py``)."""
