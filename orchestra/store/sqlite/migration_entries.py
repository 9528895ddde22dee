"""Schema v11 (issue 48): typed board entries and who consumed which; a run may be
``stalled``.

Kept beside ``migrations`` (which lists it); never edited once released. ``entries``:
one row per typed entry, ``position`` ordering a run's entries; ``consumptions``: one
row per (run, trigger, role), the primary key that makes each entry trigger each
subscribed role at most once whatever is killed when (``entries``). An entry's id is
unique in its run: a fork copies its entries under the same ids, so the triggers, task
causes and keys that name them hold in the fork as they are. ``runs`` is
rebuilt for its status CHECK (SQLite cannot alter one), as v5 did, keeping every column;
the views' triggers name ``runs``, so the rename runs in SQLite's legacy mode, which
leaves them alone (they name the rebuilt table once it is renamed) instead of refusing
the rename because the old table they named is gone.
"""

from __future__ import annotations

V11 = """CREATE TABLE entries (
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
CREATE TABLE runs_v11 (
    id TEXT PRIMARY KEY,
    pipeline TEXT NOT NULL,
    input TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'running', 'waiting', 'completed',
        'failed', 'cancelled', 'paused', 'stalled')),
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    error TEXT,
    tokens_in INTEGER NOT NULL DEFAULT 0,
    tokens_out INTEGER NOT NULL DEFAULT 0,
    cost REAL NOT NULL DEFAULT 0,
    steps INTEGER NOT NULL DEFAULT 0,
    last_seq INTEGER NOT NULL DEFAULT 0
);
INSERT INTO runs_v11 SELECT id, pipeline, input, status, created_at, updated_at, error,
    tokens_in, tokens_out, cost, steps, last_seq FROM runs;
DROP TABLE runs;
PRAGMA legacy_alter_table = ON;
ALTER TABLE runs_v11 RENAME TO runs;
PRAGMA legacy_alter_table = OFF;
CREATE INDEX runs_created ON runs (created_at);
CREATE INDEX runs_live ON runs (created_at)
WHERE status IN ('pending', 'running', 'waiting');
"""
