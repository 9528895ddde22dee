-- The orchestra store, as it is now (schema version 8). A new store is created from this
-- file; an older one is brought here by the migrations in schema.py, and a test checks
-- that both give the same tables, columns, indexes, views and triggers.
--
-- What is where:
--   runs      one row per run: status, totals, and last_seq (the event log's counter)
--   tasks     the work queue, leases (attempt = fencing token), results; a handoff is
--             its task's row (from_agent, handoff_note), read through the handoffs view
--   steps     the journal: one row per model call, tool call or compaction of a task
--             attempt (retry); a completed row is final and replayed, never re-run
--   agents, messages, compactions   each agent's (run/role) append-only history
--   plans, notes (+ notes_fts)      the board; approvals: human decisions on tool calls
--   events    each run's append-only log, seq gap-free per run
--   run_servers  which process serves which run, renewed like a lease
--   entries, consumptions   typed board entries and the roles each one triggered
--
-- Stored once: a model step's reply text is also its last message, so its output holds
-- {"text": null, "text_seq": N, "text_agent": ID} instead; a task result equal to its
-- final reply is NULL with result_msg = that message's rowid. Reads resolve both.
-- Vocabularies (CHECK lists) are orchestra._types' Literals; a test keeps them equal.

CREATE TABLE orchestra_schema (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    version INTEGER NOT NULL
);

CREATE TABLE runs (
    id TEXT PRIMARY KEY,
    pipeline TEXT NOT NULL,
    input TEXT NOT NULL,
    status TEXT NOT NULL
        CHECK (status IN ('pending', 'running', 'waiting', 'completed', 'failed', 'cancelled', 'paused', 'stalled')),
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    error TEXT,
    tokens_in INTEGER NOT NULL DEFAULT 0,
    tokens_out INTEGER NOT NULL DEFAULT 0,
    cost REAL NOT NULL DEFAULT 0,
    steps INTEGER NOT NULL DEFAULT 0,
    last_seq INTEGER NOT NULL DEFAULT 0,
    version TEXT NOT NULL DEFAULT ''
);
CREATE INDEX runs_created ON runs (created_at);
CREATE INDEX runs_live ON runs (created_at)
WHERE status IN ('pending', 'running', 'waiting');

CREATE TABLE tasks (
    -- the queue
    id TEXT PRIMARY KEY,
    run_id TEXT NOT NULL REFERENCES runs (id),
    role TEXT NOT NULL,
    input TEXT NOT NULL,
    status TEXT NOT NULL
        CHECK (status IN ('pending', 'running', 'waiting', 'completed', 'failed', 'cancelled')),
    -- the lease: attempt counts claims and fences every write made under one
    attempt INTEGER NOT NULL DEFAULT 0,
    retries INTEGER NOT NULL DEFAULT 0,
    max_attempts INTEGER NOT NULL DEFAULT 3,
    lease_owner TEXT,
    lease_expires_at REAL,
    not_before REAL NOT NULL DEFAULT 0,
    -- the outcome
    result TEXT,
    error TEXT,
    -- where it came from: parent task, "run" / "task:<id>" / "handoff:<id>", idempotency key
    parent_id TEXT,
    cause TEXT,
    "key" TEXT,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    result_msg INTEGER,         -- v2: the result is this message's content
    from_agent TEXT,            -- v3: set when a handoff created the task
    handoff_note TEXT,
    -- v6: the attempt (claim) that began the current retry: a retry's first step is
    -- journaled by that claim, so each later claim of the same retry is a reissue of it
    retry_attempt INTEGER NOT NULL DEFAULT 1
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

CREATE TABLE notes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL REFERENCES runs (id),
    author TEXT NOT NULL,
    tags TEXT NOT NULL,
    body TEXT NOT NULL,
    created_at REAL NOT NULL,
    scope TEXT NOT NULL DEFAULT '{"kind":"public","names":[]}'  -- who may read it (v13)
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
    id TEXT PRIMARY KEY,        -- "run/role"
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

-- Which processes serve which run: each driver renews its row (on the store's clock)
-- as it heartbeats its leases; a live run whose rows and leases all expired is orphaned.
CREATE TABLE run_servers (
    run_id TEXT NOT NULL REFERENCES runs (id),
    owner TEXT NOT NULL,
    seen_at REAL NOT NULL,
    expires_at REAL NOT NULL,
    PRIMARY KEY (run_id, owner)
) WITHOUT ROWID;

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

-- A handoff is its task's row; its id is the one in the task's cause ("handoff:<id>").
CREATE VIEW handoffs AS
SELECT substr(cause, 9) AS id, run_id, from_agent, role AS to_role, input AS payload,
    handoff_note AS note, id AS task_id, created_at, rowid AS position
FROM tasks WHERE from_agent IS NOT NULL;

-- A task's end as one record (``_step_record``): inserting into this view is the whole
-- write; its trigger maintains the tables in the same transaction. Nothing is stored
-- in the view itself. ``messages``, ``tasks`` and ``events`` are JSON
-- arrays of rows the store's Python already encoded and checked.
CREATE VIEW step_records AS
SELECT NULL AS run_id, NULL AS task_id, NULL AS agent_id, NULL AS agent_role, NULL AS retry,
    NULL AS step, NULL AS kind, NULL AS name, NULL AS input_digest, NULL AS output,
    NULL AS tokens_in, NULL AS tokens_out, NULL AS cost, NULL AS result,
    NULL AS result_is_reply, NULL AS reply_seq, NULL AS messages, NULL AS tasks,
    NULL AS events, NULL AS at, NULL AS lease_owner, NULL AS lease_attempt,
    NULL AS claims;
CREATE TRIGGER step_records_insert INSTEAD OF INSERT ON step_records BEGIN
    SELECT RAISE(ABORT, 'orchestra: step record is stale') WHERE NOT EXISTS (
            SELECT 1 FROM tasks WHERE id = new.task_id AND run_id = new.run_id
            AND status = 'running' AND lease_owner = new.lease_owner
            AND attempt = new.lease_attempt)
        OR (new.claims AND EXISTS (
            SELECT 1 FROM tasks WHERE run_id = new.run_id AND status = 'pending'))
        OR (json_array_length(new.messages) > 0 AND new.reply_seq
            - json_array_length(new.messages) != (
            SELECT COALESCE(MAX(seq), 0) FROM messages WHERE agent_id = new.agent_id));
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

-- A run's usual status change (no error text, not a cancel) as one statement: the
-- change, its event (the run's next seq) and the guard on the status it may come from.
-- A change the guard refuses writes nothing; the store then makes it the general way,
-- which says why.
CREATE VIEW run_status_changes AS
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

-- A step's start, and a step's end that writes nothing else (a tool's outcome), as one
-- statement each (``step_rows``): ``event`` is the event's data, encoded by the store's
-- Python (a start's gets its ``attempt`` appended here, as its last key).
CREATE VIEW step_starts AS
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

-- Typed board entries (any pydantic model, with its author, tags and scope) and
-- which role each one triggered: one consumption per (run, trigger, role).
CREATE TABLE entries (
    position INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL,
    run_id TEXT NOT NULL REFERENCES runs (id),
    type TEXT NOT NULL,
    author TEXT NOT NULL,
    body TEXT NOT NULL,
    tags TEXT NOT NULL,
    scope TEXT NOT NULL,
    task_id TEXT,
    created_at REAL NOT NULL
);
CREATE UNIQUE INDEX entries_id ON entries (run_id, id);
CREATE INDEX entries_run ON entries (run_id, position);
CREATE TABLE consumptions (
    run_id TEXT NOT NULL REFERENCES runs (id),
    trigger TEXT NOT NULL,
    role TEXT NOT NULL,
    task_id TEXT NOT NULL,
    created_at REAL NOT NULL,
    PRIMARY KEY (run_id, trigger, role)
);
