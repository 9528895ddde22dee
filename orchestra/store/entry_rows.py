"""Entries and consumptions: the columns both backends select, their rows as records,
and the encoding of an entry's JSON columns (so a bad row is refused the same way on
either backend, naming its key)."""

from __future__ import annotations

from typing import Any

from orchestra._entries import SCOPE_KINDS, Consumption, Entry, Scope
from orchestra.store.codec import Encoder
from orchestra.store.entry_protocol import NewEntry
from orchestra.store.rows import bad_row, json_of

ENTRY_COLS = "id, run_id, position, type, author, body, tags, scope, task_id, created_at"
CONSUMPTION_COLS = "run_id, trigger, role, task_id, created_at"


def encoded(enc: Encoder, author: str, entry: NewEntry) -> tuple[str, str, str]:
    """An entry's body, tags and scope as the JSON texts the store keeps (size-checked)."""
    where = f"entry {entry.type!r} from {author!r}"
    return (enc.json(entry.body, where + " body"), enc.json(list(entry.tags), where + " tags"),
            enc.json(entry.scope.to_json(), where + " scope"))


def entry(row: tuple[Any, ...]) -> Entry:
    key = row[0]
    tags = json_of("entries", key, "tags", row[6])
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise bad_row("entries", key, f"column tags is {tags!r}, not a list of strings")
    scope = json_of("entries", key, "scope", row[7])
    if not isinstance(scope, dict) or scope.get("kind") not in SCOPE_KINDS:
        raise bad_row("entries", key, f"column scope is {scope!r}, not a scope")
    return Entry(key, row[1], int(row[2]), row[3], row[4], json_of("entries", key, "body", row[5]),
                 tuple(tags), Scope.from_json(scope), row[8], float(row[9]))


def consumption(row: tuple[Any, ...]) -> Consumption:
    return Consumption(row[0], row[1], row[2], row[3], float(row[4]))
