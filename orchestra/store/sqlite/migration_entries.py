"""Schema v11 (issue 48): typed board entries and who consumed which.

Kept beside ``migrations`` (which lists it); never edited once released. ``entries``:
one row per typed entry, ``position`` ordering a run's entries; ``consumptions``: one
row per (run, trigger, role), the primary key that makes each entry trigger each
subscribed role at most once whatever is killed when (``entries``).
"""

from __future__ import annotations

V11 = """CREATE TABLE entries (
    position INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    run_id TEXT NOT NULL REFERENCES runs (id),
    type TEXT NOT NULL,
    author TEXT NOT NULL,
    body TEXT NOT NULL,
    tags TEXT NOT NULL,
    scope TEXT NOT NULL,
    task_id TEXT,
    created_at REAL NOT NULL
);
CREATE INDEX entries_run ON entries (run_id, position);
CREATE TABLE consumptions (
    run_id TEXT NOT NULL REFERENCES runs (id),
    trigger TEXT NOT NULL,
    role TEXT NOT NULL,
    task_id TEXT NOT NULL,
    created_at REAL NOT NULL,
    PRIMARY KEY (run_id, trigger, role)
);
"""
