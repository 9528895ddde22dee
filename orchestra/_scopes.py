"""Who may see what is posted on a run's board: an entry's or a note's :class:`Scope`,
and the one pure function (:func:`visible_to`) that every trigger and every reader of
a role asks (the coordinator before it triggers a role, the board a role's tools read,
the join views).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, get_args

from orchestra._errors import UserError

ScopeKind = Literal["public", "private", "roles", "labels"]
"""Who may see an entry or a note: everyone; its author's role only; its author and the
named roles; its author and the roles that carry one of the named labels."""
SCOPE_KINDS: tuple[ScopeKind, ...] = get_args(ScopeKind)


@dataclass(frozen=True, slots=True)
class Scope:
    """An entry's or a note's visibility. Build one with :data:`PUBLIC`, :data:`PRIVATE`,
    :meth:`roles` or :meth:`labels`."""

    kind: ScopeKind = "public"
    names: tuple[str, ...] = ()
    """The roles (``roles``) or labels (``labels``) that may see it."""

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

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "names": list(self.names)}

    @classmethod
    def from_json(cls, data: Any) -> Scope:
        return cls(data["kind"], tuple(data.get("names", ())))

    def __str__(self) -> str:
        return self.kind if not self.names else f"{self.kind}:{','.join(self.names)}"


PUBLIC = Scope()
PRIVATE = Scope("private")




def visible_to(scope: Scope, author_role: str, role: str, labels: frozenset[str] = frozenset()
               ) -> bool:
    """May ``role`` (carrying ``labels``) see an entry or a note of ``scope`` posted by
    ``author_role``?

    The author's role always sees its own entries; ``private`` means no one else.
    """
    if scope.kind == "public" or role == author_role:
        return True
    if scope.kind == "roles":
        return role in scope.names
    if scope.kind == "labels":
        return not labels.isdisjoint(scope.names)
    return False
