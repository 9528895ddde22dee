"""What the stock pipeline posts on its run's board, and the roles a user adds to it.

Each route posts what its task finished as a typed entry, in the transaction of the
task's end: the tester's tests, the reviewer's verdict, and a module's last word (once per
module). No stock role consumes them; a role added to the pipeline (``extra_roles``, or
:mod:`agents.extend`, whose docstring shows one) consumes them and touches no route.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field

from agents.inputs import ModuleTask
from agents.roles import Review, WorkspaceRole
from agents.workclock import WorkClock
from agents.workspace import Workspace
from orchestra import Role, UserError, entry
from orchestra.store.entry_protocol import NewEntry

AddedRole = Role | type[Role]
"""A role added to the stock pipeline: an instance, or a class (a ``WorkspaceRole`` is
given the run's workspace; any other is built without arguments)."""


class TestsWritten(BaseModel):
    """The tester wrote a module's tests (round ``round``: a correction after a review)."""

    __test__ = False  # not a pytest test class, despite the name
    module: str
    test_path: str
    round: int
    cut_off: bool = False
    """The reply ran into the token limit: the file holds its complete tests only."""


class ModuleReviewed(BaseModel):
    """The reviewer's verdict on a module's code and tests in one round."""

    module: str
    round: int
    approved: bool
    fix: Literal["code", "tests"] = "code"
    comments: list[str] = Field(default_factory=list)


Outcome = Literal["tests", "agreement", "review", "kept", "failed"]
ACCEPTED: tuple[Outcome, ...] = ("tests", "agreement", "review")


class ModuleWritten(BaseModel):
    """A module is finished, ``accepted`` or not (``reason``), in the round that ends it
    (round 0: the architect kept it, its tests passing)."""

    path: str
    round: int
    accepted: bool
    by: Outcome
    """What ended it: its tests passed, two answers agreed where no test calls it, the
    reviewer approved; its best code kept unreviewed, or failed (rounds or time ran out)."""
    tests_passed: int | None = None
    tests_failed: int | None = None
    """Failed and erroring tests of its last run (None: not known where it ended)."""
    reason: str = ""


def tests_written(done: ModuleTask, cut_off: bool) -> NewEntry:
    return entry(TestsWritten(module=done.path, test_path=done.module.test_path,
                              round=done.round, cut_off=cut_off))


def module_reviewed(done: ModuleTask, review: Review) -> NewEntry:
    return entry(ModuleReviewed(module=done.path, round=done.round, approved=review.approved,
                                fix=review.fix, comments=review.comments))


def module_written(path: str, rnd: int, *, by: Outcome,
                   report: dict[str, Any] | None = None, reason: str = "") -> NewEntry:
    counts: dict[str, int] = {}
    if report:
        counts = {"tests_passed": int(report.get("tests_passed") or 0),
                  "tests_failed": int(report.get("tests_failed") or 0)
                  + int(report.get("tests_errors") or 0)}
    return entry(ModuleWritten(path=path, round=rnd, accepted=by in ACCEPTED, by=by,
                               reason=reason[:500], **counts))


def added_roles(added: Sequence[AddedRole], workspace: Workspace,
                clock: WorkClock) -> list[Role]:
    """The roles a user adds, built for this run (sharing its workspace and clock)."""
    roles: list[Role] = []
    for item in added:
        if isinstance(item, Role):
            roles.append(item)
        elif isinstance(item, type) and issubclass(item, WorkspaceRole):
            roles.append(item(workspace, clock=clock))
        elif isinstance(item, type) and issubclass(item, Role):
            roles.append(item())
        else:
            raise UserError(f"extra role {item!r} is not a Role class or instance: pass "
                            "e.g. extra_roles=[DocsWriter] (a Role subclass)")
    return roles
