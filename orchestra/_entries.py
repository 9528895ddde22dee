"""Typed board entries: what a run's roles post for one another, with who may see it.

An entry is a pydantic model posted to a run's board under its type's name, with its
author (an agent id), tags and a :class:`Scope`. Whether a role may see an entry is
decided here once (:func:`visible_to`), in a pure function every reader and every
trigger asks: the coordinator before it triggers a role, the board view a role's tools
read, the API.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from typing import Literal, TypeVar, get_args

import pydantic

from orchestra._errors import UserError
from orchestra._types import JSON, AgentId

ScopeKind = Literal["public", "private", "roles", "labels"]
"""Who may see an entry: everyone; its author's role only; its author and the named
roles; its author and the roles that carry one of the named labels."""
SCOPE_KINDS: tuple[ScopeKind, ...] = get_args(ScopeKind)

M = TypeVar("M", bound=pydantic.BaseModel)


@dataclass(frozen=True, slots=True)
class Scope:
    """An entry's visibility. Build one with :data:`PUBLIC`, :data:`PRIVATE`,
    :meth:`roles` or :meth:`labels`."""

    kind: ScopeKind = "public"
    names: tuple[str, ...] = ()
    """The roles (``roles``) or labels (``labels``) that may see the entry."""

    def __post_init__(self) -> None:
        if self.kind not in SCOPE_KINDS:
            raise UserError(f"scope kind must be one of {list(SCOPE_KINDS)}, got {self.kind!r}")
        if self.kind in ("roles", "labels") and not self.names:
            raise UserError(f"a {self.kind!r} scope names at least one; got none "
                            f"(use Scope.{self.kind}('a', ...))")
        if not all(isinstance(n, str) and n for n in self.names):
            raise UserError(f"scope names are non-empty strings, got {self.names!r}")

    @classmethod
    def roles(cls, *names: str) -> Scope:
        return cls("roles", tuple(names))

    @classmethod
    def labels(cls, *names: str) -> Scope:
        return cls("labels", tuple(names))

    def to_json(self) -> JSON:
        return {"kind": self.kind, "names": list(self.names)}

    @classmethod
    def from_json(cls, data: JSON) -> Scope:
        return cls(data["kind"], tuple(data.get("names", ())))

    def __str__(self) -> str:
        return self.kind if not self.names else f"{self.kind}:{','.join(self.names)}"


PUBLIC = Scope()
PRIVATE = Scope("private")


@dataclass(frozen=True, slots=True)
class Entry:
    """A typed posting on a run's board. ``position`` orders a run's entries (it grows
    with each commit; compare positions within one store)."""

    id: str
    run_id: str
    position: int
    type: str
    author: str
    """The agent that posted it (``run/role``), or whoever posted it from Python."""
    body: JSON
    tags: tuple[str, ...] = ()
    scope: Scope = PUBLIC
    task_id: str | None = None
    """The task whose step or end committed it (None: posted from Python)."""
    created_at: float = 0.0

    @property
    def author_role(self) -> str:
        return AgentId.parse(self.author).role

    def value(self, model: builtins.type[M]) -> M:
        """The body as ``model`` (``entry.value(Finding)``)."""
        if model.__name__ != self.type:
            raise UserError(f"entry {self.id} is a {self.type!r}, not a {model.__name__!r}")
        return model.model_validate(self.body)


@dataclass(frozen=True, slots=True)
class Consumption:
    """That ``role`` was triggered by ``trigger`` (an entry id, or ``join:<name>``) and
    the task it got: at most one per (run, trigger, role), whatever is killed when."""

    run_id: str
    trigger: str
    role: str
    task_id: str
    created_at: float = 0.0


def visible_to(scope: Scope, author_role: str, role: str, labels: frozenset[str] = frozenset()
               ) -> bool:
    """May ``role`` (carrying ``labels``) see an entry of ``scope`` posted by ``author_role``?

    The author's role always sees its own entries; ``private`` means no one else.
    """
    if scope.kind == "public" or role == author_role:
        return True
    if scope.kind == "roles":
        return role in scope.names
    if scope.kind == "labels":
        return not labels.isdisjoint(scope.names)
    return False
