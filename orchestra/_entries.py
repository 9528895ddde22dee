"""Typed board entries: what a run's roles post for one another, with who may see it.

An entry is a pydantic model posted to a run's board under its type's name, with its
author (an agent id), tags and a :class:`Scope`. Whether a role may see an entry is
decided once (:func:`visible_to`, in ``_scopes``, for notes too), in a pure function
every reader and every trigger asks: the coordinator before it triggers a role, the
board view a role's tools read, the API.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from typing import TypeVar

import pydantic

from orchestra._errors import UserError
from orchestra._scopes import PRIVATE, PUBLIC, SCOPE_KINDS, Scope, ScopeKind, visible_to
from orchestra._types import JSON, AgentId

__all__ = ["PRIVATE", "PUBLIC", "SCOPE_KINDS", "Consumption", "Entry", "Scope", "ScopeKind",
           "visible_to"]

M = TypeVar("M", bound=pydantic.BaseModel)


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
