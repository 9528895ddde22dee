"""The stock roles' task inputs, typed and validated when a task is posted (a bad payload
fails the posting task, naming the field). What the spec states about a module is read
once, when the plan is made, and carried in each of its tasks as :class:`Stated`.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from agents.roles import ModuleSpec, PlanTask
from agents.specread import SpecCase

__all__ = ["ModuleTask", "PlanTask", "Stated"]


class Stated(BaseModel):
    """What the spec states about one module, read once."""

    section: str = Field(description="the spec's part about the module (all of it when no "
                                     "heading names the module)")
    cases: list[SpecCase] = Field(default_factory=list, description="examples the spec states")


class ModuleTask(BaseModel):
    """A module's task, for its tester, coder and reviewer."""

    module: ModuleSpec
    round: int = 1
    spec: str = ""
    stated: Stated
    uses: list[ModuleSpec] = Field(default_factory=list)
    before: list[str] = Field(default_factory=list)
    """The plan's modules written before this one, which the coder's first request shows."""
    comments: list[str] = Field(default_factory=list)
    """The reviewer's comments that sent the module back."""
    report: dict[str, Any] | None = None
    """The last test run (small: see :func:`agents.moduletask.summary`)."""
    tests: str = ""
    """The module's tests as they were (the tester's later rounds, the reviewer)."""
    code: str = ""
    """The module's code as it was (the tester's later rounds, the reviewer)."""
    current: str = ""
    """The code a later coder round starts from."""
    summary: str = ""
    """The coder's last words (the reviewer)."""
    history: list[dict[str, Any]] = Field(default_factory=list)
    """The coder's other answers in its task: score, first failure (the reviewer)."""
    until: float | None = None
    """The run's working seconds by which this module's rounds end (its share of the budget)."""
    worked: float = 0.0
    """The run's working seconds when the task was posted (see :mod:`agents.workclock`)."""
    began: float | None = None
    """The run's working seconds when its round's coder task was posted (the reviewer)."""

    @property
    def path(self) -> str:
        return self.module.path

    @property
    def test_path(self) -> str:
        return self.module.test_path


def module_task(task_input: Any) -> ModuleTask:
    """A task's input as a :class:`ModuleTask`."""
    return task_input if isinstance(task_input, ModuleTask) else ModuleTask.model_validate(
        task_input)
