"""What a role consumes from the board: entries of a type (:class:`On`), or a join over
the whole board (:class:`When`). Declarations only; the coordinator decides which roles
an entry triggers (``coordinator.subscriptions``) and commits each trigger with the
entry, at most once per (entry, role).

    class Critic(Role[Finding, Review]):
        \"\"\"You review a finding.\"\"\"
        consumes = [On(Finding)]

    class Researcher(Role[Question, Finding]):
        \"\"\"You answer a question.\"\"\"
        consumes = [On(Question), On(Review, where=lambda r: not r.accepted,
                                     input=lambda r: Question(text=r.question))]

    class Writer(Role[Brief, Report]):
        \"\"\"You write the report.\"\"\"
        consumes = [When("answered", all_answered, input=brief)]
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import pydantic

from orchestra._entries import PUBLIC, Entry, Scope, visible_to
from orchestra._errors import UserError
from orchestra.store.entry_protocol import NewEntry

M = TypeVar("M", bound=pydantic.BaseModel)


class BoardView:
    """A run's entries as one role may see them (its scope checked on every entry): what
    a join's predicate reads, and what ``ctx.board.get_entries`` returns."""

    __slots__ = ("_entries",)

    def __init__(self, entries: Sequence[Entry], role: str | None,
                 labels: frozenset[str] = frozenset()) -> None:
        """``role`` None: the whole board (the pipeline's own view, for ``done``)."""
        self._entries = tuple(e for e in entries if role is None
                              or visible_to(e.scope, e.author_role, role, labels))

    def entries(self, type: str | builtins.type[pydantic.BaseModel] | None = None
                ) -> list[Entry]:
        name = type if isinstance(type, str) or type is None else type.__name__
        return [e for e in self._entries if name is None or e.type == name]

    def of(self, model: builtins.type[M]) -> list[M]:
        """The values of every visible entry of ``model``'s type, in posting order."""
        return [e.value(model) for e in self.entries(model)]

    def __len__(self) -> int:
        return len(self._entries)


@dataclass(frozen=True)
class On:
    """Consume each entry of ``type`` (for which ``where`` holds): one task per entry,
    whose input is the entry's value (or ``input(value)``). A role is not triggered by
    its own entries unless ``own``."""

    type: builtins.type[pydantic.BaseModel]
    where: Callable[[Any], bool] | None = None
    input: Callable[[Any], Any] | None = None
    own: bool = False

    def __post_init__(self) -> None:
        if not (isinstance(self.type, builtins.type)
                and issubclass(self.type, pydantic.BaseModel)):
            raise UserError(f"On({self.type!r}): consume a pydantic model class")

    def task_input(self, value: pydantic.BaseModel) -> Any:
        return value if self.input is None else self.input(value)


@dataclass(frozen=True)
class When:
    """Act once, when ``ready(board)`` first holds over the entries the role may see: a
    join (``"every Question has an accepted Review"``). ``name`` keys the trigger: each
    join of a role fires once per run. The task's input is ``input(board)`` ({} without)."""

    name: str
    ready: Callable[[BoardView], bool]
    input: Callable[[BoardView], Any] | None = None

    def __post_init__(self) -> None:
        if not self.name or ":" in self.name:
            raise UserError(f"When({self.name!r}): name the join with a word, without ':'")

    def task_input(self, board: BoardView) -> Any:
        return {} if self.input is None else self.input(board)


Subscription = On | When


def entry(value: pydantic.BaseModel, *, tags: Sequence[str] = (),
          scope: Scope = PUBLIC) -> NewEntry:
    """A pydantic model as an entry of its type, to post from a route (``writes.entries``
    or returned) or a tool (``ctx.post``); ``scope``: who may see it."""
    return NewEntry.of(value, tags=tuple(tags), scope=scope)


@dataclass(frozen=True)
class Stall:
    """When a run's board has stopped making progress (``Pipeline.stall``): ``after`` task
    ends in a row posted no entry, or one entry (same type, same body) was posted
    ``repeats`` times. The run then ends ``stalled`` with the reason in its error and a
    note, or (``wait``) waits for a person: post an entry and resume it."""

    after: int | None = 10
    repeats: int | None = 3
    wait: bool = False

    def __post_init__(self) -> None:
        for name in ("after", "repeats"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise UserError(f"Stall({name}={value}): give a count of at least 1, or None")
