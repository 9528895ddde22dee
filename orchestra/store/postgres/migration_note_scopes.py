"""Schema v11 (issue 48): a note has a scope, as an entry does, as SQLite's v13
(``sqlite/migration_note_scopes``). Never edited once released. Notes written before it
are public, as they were."""

from __future__ import annotations

V11 = """ALTER TABLE notes ADD COLUMN scope text NOT NULL DEFAULT '{"kind":"public","names":[]}';
"""
