"""Which of its role's patches a task runs with, kept in the task's journal.

A role may carry a change to runs in flight behind ``patched(name)``
(``Role.instructions_for``). A task that starts under the code with the patch runs with
it, and its first model step records the role's patches (``"patches"`` in the step's
record); a task whose first model step was journaled before, by code without the patch,
runs without it: its completed steps replay exactly as they were asked, and its later
steps keep asking in that form. The record is data in the journal, read back on every
replay; nothing is kept per process.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from orchestra._errors import RoleDefinitionError
from orchestra._types import Step
from orchestra.roles import Role

PATCHES_KEY = "patches"
"""Where a task's first model step records the patches it runs with."""


class TaskPatches:
    """``patched(name)`` for one task, from its journal (or the role, at its start)."""

    def __init__(self, role: str, declared: Collection[str], recorded: Sequence[Step]) -> None:
        self.role, self.declared = role, frozenset(declared)
        first = next((s for s in recorded if s.step == 1 and s.kind == "model"
                      and s.status == "completed"), None)
        self.started_before = first is not None
        out: Any = first.output if first is not None else None
        self.on = frozenset(out.get(PATCHES_KEY, ())) if isinstance(out, dict) \
            else self.declared if first is None else frozenset()

    def __call__(self, name: str) -> bool:
        if name not in self.declared:
            raise RoleDefinitionError(self.role, "patches", f"patched({name!r}) names no patch "
                                      f"of the role; its patches: {sorted(self.declared)}")
        return name in self.on

    def prompt(self, role: Role) -> str:
        """The role's system prompt with the patches this task runs with (a role without
        patches is asked as before, so a ``system_prompt()`` override keeps working)."""
        return role.system_prompt(self) if type(role).patches else role.system_prompt()

    def record(self, output: dict[str, Any]) -> None:
        """Mark a new first model step's record with the patches the task runs with."""
        if self.declared and not self.started_before:
            output[PATCHES_KEY] = sorted(self.on)
