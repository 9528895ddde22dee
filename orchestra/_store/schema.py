"""Schema and migrations of the SQLite blackboard.

Migrations are an ordered list of SQL scripts plus a version row. Each script is
applied with its version bump in one ``BEGIN IMMEDIATE`` transaction, so a failed
script leaves neither a partial schema nor a bumped version. ``PRAGMA
application_id`` marks the file as an orchestra store, so that opening some other
program's SQLite file is refused instead of being "migrated".

Everything that inspects a file runs before anything writes to it: a file that is
not SQLite, is corrupt, belongs to another program or comes from a newer
orchestra is refused byte-for-byte untouched.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator, Sequence

from orchestra._errors import NotAStoreError, SchemaVersionError, StoreError

APPLICATION_ID = 0x4F524348
"""``PRAGMA application_id`` of every orchestra store ("ORCH")."""

SQLITE_HEADER = b"SQLite format 3\x00"

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

MIGRATIONS: tuple[str, ...] = (V1, V2, V3)
"""Script ``i`` (0-based) takes the schema from version ``i`` to ``i + 1``. Append only."""

LATEST_VERSION = len(MIGRATIONS)


def check_file(path: str, *, verify_only: bool) -> None:
    """Refuse a file that is not SQLite by its 16-byte header, before SQLite touches it."""
    try:
        with open(path, "rb") as f:
            header = f.read(len(SQLITE_HEADER))
    except FileNotFoundError:
        if verify_only:
            raise SchemaVersionError(
                f"{path}: no store exists there (verify_only=True never creates one)"
            ) from None
        return
    except IsADirectoryError:
        raise NotAStoreError(f"{path} is a directory, not an SQLite database file") from None
    if header and header != SQLITE_HEADER:
        raise NotAStoreError(
            f"{path} is not an SQLite database (its header is {header!r}); "
            "point orchestra at a new path or at an existing orchestra store"
        )


def read_version(conn: sqlite3.Connection, path: str) -> int:
    """Return the file's schema version (0 for an empty file), reading only.

    Raises ``NotAStoreError`` for a corrupt file or another program's database and
    ``SchemaVersionError`` for a file written by a newer orchestra.
    """
    # One read transaction, so the three reads see one snapshot: read one by one, a
    # process migrating the file in between would show tables without the id.
    own = not conn.in_transaction
    try:
        if own:
            conn.execute("BEGIN")
        try:
            app_id = conn.execute("PRAGMA application_id").fetchone()[0]
            tables = {r[0] for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'")}
            version = 0
            if app_id == APPLICATION_ID and "orchestra_schema" in tables:
                row = conn.execute("SELECT version FROM orchestra_schema").fetchone()
                version = 0 if row is None else int(row[0])
        finally:
            if own and conn.in_transaction:
                conn.execute("COMMIT")
    except sqlite3.Error as exc:
        raise open_error(path, exc) from exc
    if app_id != APPLICATION_ID and (app_id != 0 or tables):
        raise NotAStoreError(
            f"{path} is an SQLite database but not an orchestra store (application_id "
            f"{app_id}, tables {sorted(tables)[:5]}); point orchestra at a new path"
        )
    if version > LATEST_VERSION:
        raise SchemaVersionError(
            f"{path} has schema version {version}, but this orchestra knows only up to "
            f"version {LATEST_VERSION}: it was written by a newer orchestra; upgrade "
            "orchestra to open it"
        )
    return version


def migrate(conn: sqlite3.Connection, path: str, *, verify_only: bool = False,
            migrations: Sequence[str] = MIGRATIONS) -> int:
    """Bring the file to ``len(migrations)``; return the version it ends at.

    Each step re-reads the version inside its write lock, so several processes
    opening one new file at once apply each script exactly once.
    """
    latest = len(migrations)
    version = read_version(conn, path)
    if version >= latest:
        return version
    if verify_only:
        raise SchemaVersionError(
            f"{path} has schema version {version} and this orchestra needs version "
            f"{latest}: migrations are pending; open it without verify_only to apply them"
        )
    for target in range(version + 1, latest + 1):
        # BEGIN IMMEDIATE so two processes migrating at once queue on the write lock
        # instead of both reading the old version and deadlocking on upgrade.
        conn.execute("BEGIN IMMEDIATE")
        try:
            current = read_version(conn, path)
            if current < target:
                for statement in _statements(migrations[target - 1]):
                    conn.execute(statement)
                conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                conn.execute(
                    "INSERT OR REPLACE INTO orchestra_schema (id, version) VALUES (1, ?)", (target,)
                )
            conn.execute("COMMIT")
        except BaseException as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error):
                raise StoreError(
                    f"{path}: migration to schema version {target} failed ({exc}); "
                    f"the file stays at version {target - 1}"
                ) from exc
            raise
    return latest


def _statements(script: str) -> Iterator[str]:
    """Split a script into statements (``executescript`` would COMMIT our transaction)."""
    buffer = ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            statement = buffer.strip()
            buffer = ""
            if statement.strip(";").strip():
                yield statement
    if buffer.strip() and not _only_comments(buffer):
        yield buffer.strip()  # incomplete: let SQLite report the syntax error


def _only_comments(text: str) -> bool:
    return all(not line.strip() or line.strip().startswith("--") for line in text.splitlines())


def _is_corruption(exc: sqlite3.Error) -> bool:
    return getattr(exc, "sqlite_errorname", "") in {"SQLITE_CORRUPT", "SQLITE_NOTADB"}


def _corrupt(path: str, exc: sqlite3.Error) -> NotAStoreError:
    size = os.path.getsize(path) if os.path.exists(path) else 0
    return NotAStoreError(
        f"{path} is corrupt or not an SQLite database ({exc}; {size} bytes); "
        "restore it from a backup or point orchestra at a new path"
    )


def open_error(path: str, exc: sqlite3.Error) -> StoreError:
    """Say whose problem an error while opening is: a bad file, or the environment."""
    if _is_corruption(exc) or not isinstance(exc, sqlite3.OperationalError):
        return _corrupt(path, exc)
    return StoreError(f"{path}: cannot open the store: {exc}")
