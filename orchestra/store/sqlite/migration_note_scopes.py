"""Schema v13 (issue 48): a note has a scope, as an entry does (its JSON, ``Scope.to_json``).

Kept beside ``migrations`` (which lists it); never edited once released. Notes written
before it are public, as they were.
"""

from __future__ import annotations

V13 = """ALTER TABLE notes ADD COLUMN scope TEXT NOT NULL DEFAULT '{"kind":"public","names":[]}';
"""
