"""Who acts when several roles are eligible: a pipeline's control (``Pipeline.control``).

``All()`` (the default) gives every triggered role its task at once. ``Priority(...)``
gives tasks to the highest-ranked roles among those triggered; the rest wait for the
run to idle, when they are offered again. ``Controller(role)`` asks a role of the
pipeline: it gets the eligible work as :class:`Options` and answers a :class:`Choice`;
its answer is a model call like any other, journaled, so a resume, a replay or a fork
chooses the same. Declarations only; ``coordinator.control`` applies them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pydantic

from orchestra._errors import UserError


@dataclass(frozen=True)
class All:
    """Every triggered role acts."""


@dataclass(frozen=True)
class Priority:
    """The triggered roles ranked first act first (roles not named rank last); the others
    act when the run has nothing else to do."""

    order: Sequence[Any]
    """Roles (classes or names), highest priority first."""

    def __post_init__(self) -> None:
        if not self.order:
            raise UserError("Priority() ranks at least one role: Priority([Critic, Writer])")


@dataclass(frozen=True)
class Controller:
    """A role that reads the eligible work (``Options``) and picks what acts (``Choice``)."""

    role: Any
    """The controller role (class or name): ``Role[Options, Choice]``."""


Control = All | Priority | Controller


class Option(pydantic.BaseModel):
    """One piece of eligible work: ``role`` would act on ``trigger`` (an entry's type and
    body, or a join) with ``input``."""

    trigger: str
    role: str
    about: str
    input: Any = None


class Options(pydantic.BaseModel):
    """What a controller chooses from."""

    options: list[Option]


class Choice(pydantic.BaseModel):
    """A controller's answer: the indexes (into ``Options.options``) of the work to do."""

    chosen: list[int]
