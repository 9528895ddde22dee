"""Typed entries and the triggers they cause, as the store takes and returns them.

An entry travels in a :class:`~orchestra.store.protocol.Writes` bundle (``entries``)
and commits with the step or the task's end that wrote it; so does each
:class:`NewTrigger` (``triggers``): the task a subscribed role gets for it and the
consumption record that says so, unique per (run, trigger, role). The store decides
nothing about subscriptions: the coordinator does (``coordinator.subscriptions``), in
a pure function, and hands the store what to write.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import pydantic

from orchestra._entries import PUBLIC, Consumption, Entry, Scope
from orchestra._errors import UserError
from orchestra._types import JSON
from orchestra.store.codec import new_id


@dataclass(frozen=True, slots=True)
class NewEntry:
    """An entry to post. Its ``id`` is drawn when it is made, so a trigger in the same
    bundle can name it; a bundle that never commits takes its ids with it."""

    type: str
    body: JSON
    tags: tuple[str, ...] = ()
    scope: Scope = PUBLIC
    id: str = field(default_factory=new_id)

    def __post_init__(self) -> None:
        if not self.type or not isinstance(self.type, str):
            raise UserError(f"an entry's type is a non-empty string, got {self.type!r}")
        if not all(isinstance(t, str) for t in self.tags):
            raise UserError(f"entry tags must be strings, got {self.tags!r}")

    @classmethod
    def of(cls, value: pydantic.BaseModel, *, tags: tuple[str, ...] | list[str] = (),
           scope: Scope = PUBLIC) -> NewEntry:
        """A pydantic model as an entry of its class's name."""
        if not isinstance(value, pydantic.BaseModel):
            raise UserError(f"an entry is a pydantic model instance, got {value!r}")
        return cls(type(value).__name__, value.model_dump(mode="json"), tuple(tags), scope)


@dataclass(frozen=True, slots=True)
class NewTrigger:
    """A role triggered by ``trigger`` (an entry id, or ``join:<name>``): the store
    creates ``task`` and records the consumption, unless one is already recorded for
    (run, trigger, role), in which case it writes nothing."""

    trigger: str
    role: str
    input: JSON
    max_attempts: int = 3

    @property
    def key(self) -> str:
        """The task's key: the same trigger never makes a second task for the role."""
        return f"on:{self.trigger}:{self.role}"


class Entries(Protocol):
    """Typed entries on a run's board, and who consumed which."""

    async def post_entry(self, run_id: str, author: str, entry: NewEntry | pydantic.BaseModel,
                         *, tags: tuple[str, ...] = (), scope: Scope = PUBLIC,
                         triggers: Sequence[NewTrigger] = ()) -> Entry: ...
    async def post_triggers(self, run_id: str, triggers: Sequence[NewTrigger]
                            ) -> list[Consumption]: ...
    async def get_entries(self, run_id: str, *, type: str | None = None,
                          after: int = 0) -> list[Entry]:
        """The run's entries in posting order (``after``: only those past that position)."""
        ...
    async def get_consumptions(self, run_id: str) -> list[Consumption]: ...


def as_new_entry(entry: Any, tags: tuple[str, ...] = (), scope: Scope = PUBLIC) -> NewEntry:
    """What ``post_entry`` was given, as a ``NewEntry``."""
    if isinstance(entry, NewEntry):
        return entry
    return NewEntry.of(entry, tags=tags, scope=scope)
