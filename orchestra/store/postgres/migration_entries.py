"""Schema v8 (issue 48): typed board entries and who consumed which, and a run may be
``stalled``, as SQLite's v11
(``sqlite/migration_entries``). Never edited once released. Both tables go with their
run (``ON DELETE CASCADE``): a prune deletes a run's row and they follow."""

from __future__ import annotations

V8 = """CREATE TABLE entries (
    position bigserial PRIMARY KEY,
    id text NOT NULL,
    run_id text NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    type text NOT NULL,
    author text NOT NULL,
    body text NOT NULL,
    tags text NOT NULL,
    scope text NOT NULL,
    task_id text,
    created_at double precision NOT NULL
);
CREATE UNIQUE INDEX entries_id ON entries (run_id, id);
CREATE INDEX entries_run ON entries (run_id, position);
CREATE TABLE consumptions (
    run_id text NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    trigger text NOT NULL,
    role text NOT NULL,
    task_id text NOT NULL,
    created_at double precision NOT NULL,
    PRIMARY KEY (run_id, trigger, role)
);
ALTER TABLE runs DROP CONSTRAINT runs_status_check;
ALTER TABLE runs ADD CONSTRAINT runs_status_check CHECK (status IN
    ('pending', 'running', 'waiting', 'completed', 'failed', 'cancelled', 'paused', 'stalled'));
"""
