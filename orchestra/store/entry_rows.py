"""Entries and consumptions: the columns both backends select, their rows as records,
and the encoding of an entry's JSON columns and a note's (tags, scope), so a bad row is
refused the same way on either backend, naming its key."""

from __future__ import annotations

from typing import Any

from orchestra._entries import PUBLIC, Consumption, Entry, Scope
from orchestra._errors import UserError
from orchestra.store.codec import Encoder
from orchestra.store.entry_protocol import NewEntry
from orchestra.store.protocol import NewNote
from orchestra.store.rows import bad_row, json_of, scope_of

ENTRY_COLS = "id, run_id, position, type, author, body, tags, scope, task_id, created_at"
CONSUMPTION_COLS = "run_id, trigger, role, task_id, created_at"


def encoded(enc: Encoder, author: str, entry: NewEntry) -> tuple[str, str, str]:
    """An entry's body, tags and scope as the JSON texts the store keeps (size-checked)."""
    where = f"entry {entry.type!r} from {author!r}"
    return (enc.json(entry.body, where + " body"), enc.json(list(entry.tags), where + " tags"),
            enc.json(entry.scope.to_json(), where + " scope"))


def note_columns(enc: Encoder, author: str, note: NewNote) -> tuple[str, str]:
    """A note's tags and scope as the JSON texts the store keeps (its scope as an entry's)."""
    tags = tuple(note.tags)
    if not all(isinstance(t, str) for t in tags):
        raise UserError(f"note tags must be strings, got {tags!r}")
    if not isinstance(note.scope, Scope):
        raise UserError(f"a note's scope is a Scope (PUBLIC, PRIVATE, Scope.roles(...)), "
                        f"got {note.scope!r}")
    return (enc.json(list(tags), f"note tags from {author!r}"),
            enc.json(note.scope.to_json(), f"note scope from {author!r}"))


def note_posted(note_id: int, author: str, note: NewNote) -> dict[str, Any]:
    """The ``note.posted`` event: its scope named when it is not public (never its body)."""
    data: dict[str, Any] = {"note": note_id, "author": author, "tags": list(note.tags)}
    if note.scope != PUBLIC:
        data["scope"] = str(note.scope)
    return data


def entry(row: tuple[Any, ...]) -> Entry:
    key = row[0]
    tags = json_of("entries", key, "tags", row[6])
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise bad_row("entries", key, f"column tags is {tags!r}, not a list of strings")
    return Entry(key, row[1], int(row[2]), row[3], row[4], json_of("entries", key, "body", row[5]),
                 tuple(tags), scope_of("entries", key, row[7]), row[8], float(row[9]))


def consumption(row: tuple[Any, ...]) -> Consumption:
    return Consumption(row[0], row[1], row[2], row[3], float(row[4]))
