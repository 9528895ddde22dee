"""Schema and migrations of the PostgreSQL blackboard.

The same tables as the SQLite store, in PostgreSQL's types. Versioning works as in
SQLite: a version row; each script and its version bump commit in one transaction
(PostgreSQL DDL is transactional, so a failed script leaves neither a partial schema
nor a bumped version); a database from a newer orchestra, or another program's
tables, is refused before anything is written. Concurrent openers of a new
database serialize on an advisory lock, so each script runs once.
"""

from __future__ import annotations

import asyncpg

from orchestra._errors import NotAStoreError, SchemaVersionError, StoreError
from orchestra._types import MESSAGE_ROLES, STEP_KINDS
from orchestra.store.postgres.step_sql import V5
from orchestra.store.postgres.step_sql_v6 import V6

MARK = "orchestra"
"""``orchestra_schema.app``: what marks a database's tables as an orchestra store."""
_LOCK_KEY = 0x4F524348  # "ORCH": the advisory lock migrations take



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
MIGRATIONS: tuple[str, ...] = (V1, V2, V3, V4, V5, V6, V7)
"""Script ``i`` (0-based) takes the schema from version ``i`` to ``i + 1``. Append only."""

LATEST_VERSION = len(MIGRATIONS)

_TABLES = (
    "SELECT table_name FROM information_schema.tables "
    "WHERE table_schema = current_schema() ORDER BY table_name"
)
_VERSION = "SELECT app, version FROM orchestra_schema WHERE id = 1"


async def read_version(conn: asyncpg.Connection, where: str) -> int:
    """The database's schema version (0 for an empty one), reading only.

    Raises ``NotAStoreError`` for another program's tables and ``SchemaVersionError``
    for a database written by a newer orchestra.
    """
    tables = [r[0] for r in await conn.fetch(_TABLES)]
    if not tables:
        return 0
    row = await conn.fetchrow(_VERSION) if "orchestra_schema" in tables else None
    if row is None or row[0] != MARK:
        raise NotAStoreError(
            f"{where} holds tables that are not an orchestra store ({', '.join(tables[:5])}); "
            "point orchestra at an empty database or schema"
        )
    version = int(row[1])
    if version > LATEST_VERSION:
        raise SchemaVersionError(
            f"{where} has schema version {version}, but this orchestra knows only up to "
            f"version {LATEST_VERSION}: it was written by a newer orchestra; upgrade "
            "orchestra to open it"
        )
    return version


async def migrate(conn: asyncpg.Connection, where: str, *, verify_only: bool = False,
                  migrations: tuple[str, ...] = MIGRATIONS) -> int:
    """Bring the database to ``len(migrations)``; return the version it ends at."""
    latest = len(migrations)
    version = await read_version(conn, where)
    if version >= latest:
        return version
    if verify_only:
        raise SchemaVersionError(
            f"{where} has schema version {version} and this orchestra needs version "
            f"{latest}: migrations are pending; run `orchestra migrate` or open it without "
            "verify_only"
        )
    for target in range(version + 1, latest + 1):
        try:
            async with conn.transaction():
                await conn.execute("SELECT pg_advisory_xact_lock($1)", _LOCK_KEY)
                if await read_version(conn, where) < target:  # another opener may have done it
                    await conn.execute(migrations[target - 1])
                    await conn.execute(
                        "INSERT INTO orchestra_schema (id, app, version) VALUES (1, $1, $2) "
                        "ON CONFLICT (id) DO UPDATE SET version = excluded.version",
                        MARK, target)
        except asyncpg.PostgresError as exc:
            raise StoreError(
                f"{where}: migration to schema version {target} failed ({exc}); "
                f"the database stays at version {target - 1}"
            ) from exc
    return latest
