"""The stock roles' answers and their shared base, and the architect. The roles share a
:class:`~agents.workspace.Workspace` and answer in one reply each (files as fenced blocks,
a verdict or a plan as JSON).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any, Literal

from pydantic import BaseModel, Field
from pydantic.json_schema import SkipJsonSchema

from agents.checks import check_plan, path_problem
from agents.specplan import complete_plan, package_inits, plan_from_spec
from agents.testrunner import TestReport, run_pytest
from agents.workclock import WorkClock
from agents.workspace import Workspace, WorkspaceError
from orchestra import ModelRetry, ModelSettings, Role, ToolContext
from orchestra.answers import Files
from orchestra.models import OutputSchema
from orchestra.runtime.replies import parse_output


# Descriptions carry no example values: a weak model copies an example path into
# every plan (seen with Qwen2.5-Coder-0.5B: a demo path in 8 of 13 plans).
class ModuleSpec(BaseModel):
    """One module of the plan."""

    path: str = Field(description="the module's file path as the spec names it, relative "
                                  "to the workspace")
    purpose: str = Field(description="what the module does, in one sentence")
    public_api: list[str] = Field(description="signatures of its public functions")
    test_path: str = Field(description="the path of its pytest file as the spec names it, "
                                       "relative to the workspace")
    uses: list[str] = Field(default_factory=list,
                            description="paths of the plan's other modules this one imports")


class Decision(BaseModel):
    """A design choice for this project (not a description of a tool)."""

    decision: str = Field(description="a design choice for this project")
    reason: str = Field(description="why it was made")


class PlanTask(BaseModel):
    """The architect's task: the spec, and the files the workspace already has."""

    spec: str
    workspace_files: list[str] = Field(default_factory=list)


class ProjectPlan(BaseModel):
    """The architect's plan: modules to build and the decisions behind them."""

    modules: list[ModuleSpec] = Field(min_length=1)
    decisions: list[Decision] = Field(default_factory=list)
    kept: SkipJsonSchema[list[str]] = Field(default_factory=list)
    """Modules the workspace holds whose tests pass, not written again (the check's)."""
    files: SkipJsonSchema[dict[str, str]] = Field(default_factory=dict)
    """The packages' ``__init__.py`` the check wrote, so a fork can rebuild its workspace."""


class CodeAnswer(Files):
    """The coder's answer: the module as a fenced file, and what its tests said of it
    (filled by the coder's own check: the real pytest run, and the test file it ran)."""

    report: dict[str, Any] = Field(default_factory=dict)
    tests: str = ""
    out_of_time: bool = False
    """The run's time budget ended the test rounds: this is the best answer so far."""
    history: list[dict[str, Any]] = Field(default_factory=list)
    """The other answers tried in the same task: score, first failure."""
    accepted: bool = False
    """The coder accepted it: every test passes, or every test the spec vouches for."""
    agreed: bool = False
    """The coder accepted it where no test calls it: two answers behaved alike when run."""
    vouched: list[int] = Field(default_factory=list)
    """Of the tests the spec vouches for: [passed, run] ([] when not counted)."""


class TestsAnswer(Files):
    """The tester's answer: the module's test file, written from the spec alone."""

    __test__ = False  # not a pytest test class, despite the name
    cut_off: bool = False
    """The reply ran into the token limit: the file holds its complete tests only."""


class Review(BaseModel):
    """The reviewer's verdict on one module."""

    module: str = Field(description="the module path")
    approved: bool
    fix: Literal["code", "tests"] = Field(
        default="code", description="when not approved: which is wrong against the spec, "
                                    "the module's code or its tests")
    comments: list[str] = Field(
        default_factory=list, description="concrete change requests when not approved")


_TIMING = re.compile(r"\s+in \d+(?:\.\d+)?s\b")
REPORT_FIELDS = ("passed", "tests_passed", "tests_failed", "tests_errors", "timed_out")
"""What the roles keep of a :class:`TestReport` (:meth:`WorkspaceRole.tests`), with its output."""


class WorkspaceRole(Role):
    """Roles that work on a workspace, with no tools: their task input carries what they
    need to see, and a small model answers in one plain reply."""

    recall = False

    def __init__(self, workspace: Workspace, *, budget: float | None = None,
                 clock: WorkClock | None = None) -> None:
        self.workspace = workspace
        self.budget = budget
        """The run's working seconds after which the role takes what it has instead of
        another round (the run's time budget; None: no budget)."""
        self.clock = clock or WorkClock()

    def task_message(self, task_input: Any) -> str:
        """The task as the model reads it; the run's working time it was posted at is
        read into the clock (at every claim: a resumed process starts from there)."""
        worked = (task_input.get("worked") if isinstance(task_input, dict)
                  else getattr(task_input, "worked", None))
        if isinstance(worked, (int, float)):
            self.clock.seen(float(worked))
        return super().task_message(task_input)

    def out_of_time(self, until: float | None = None) -> bool:
        """True once the run's working time reaches its budget or ``until`` (read in
        journaled checks only, so a replay decides as the first execution did)."""
        return self.clock.past(self.budget, until)

    async def tests(self, target: str | None, limit_s: float = 60.0) -> dict[str, Any]:
        report: TestReport = await run_pytest(self.workspace.root, target, timeout=limit_s)
        # timings vary run to run; the model gets a stable view (replays stay exact)
        output = _TIMING.sub("", report.output).replace(str(self.workspace.root), ".")
        return {**report.model_dump(include=set(REPORT_FIELDS)), "output": output}


@dataclass(frozen=True)
class _PlanReply:
    """The plan as a JSON object; a reply that is no plan gives way to the plan the spec
    states, with no further model call, wherever the spec names its modules."""

    output: type[ProjectPlan] = ProjectPlan

    def instructions(self) -> str:
        return ""

    def task_note(self, task_input: Any) -> str:
        return ""

    def schema(self) -> OutputSchema:
        return OutputSchema(ProjectPlan.__name__, ProjectPlan.model_json_schema(),
                            inspect.cleandoc(ProjectPlan.__doc__ or ""))

    def parse(self, text: str, *, truncated: bool, task_input: Any) -> BaseModel:
        try:
            plan: BaseModel = parse_output(text, ProjectPlan, truncated=truncated)
        except ValueError:
            stated = plan_from_spec(PlanTask.model_validate(task_input).spec)
            if stated is None:
                raise
            return ProjectPlan.model_validate(stated)
        return plan


class Architect(WorkspaceRole):
    """You are the architect of a small Python project. Read the spec you are given
    (workspace_files lists the files the workspace already has), then reply with the
    plan as a JSON object: the modules to
    build (path, purpose, public_api with each public function's or class's signature
    exactly as the spec gives it, test_path, and uses: the plan's other modules it
    imports) and your key decisions with their reasons. Keep modules small; one test
    file per module."""

    name = "architect"
    input = PlanTask
    answer = _PlanReply()
    # a runaway reply stops early, not at a timeout; greedy: one plan, the likeliest
    settings = ModelSettings(max_tokens=1500, temperature=0.0)
    concurrency = 1

    async def check_output(self, ctx: ToolContext, output: Any) -> ProjectPlan | None:
        """The plan made whole (:func:`complete_plan`): only a path outside the workspace
        or not a ``.py`` file is dropped, and only a plan with no usable module left is
        sent back."""
        spec = PlanTask.model_validate(ctx.task_input).spec
        usable = [m.model_dump(mode="json") for m in output.modules
                  if not path_problem(self.workspace, m.path)]
        for m in (m for m in usable if path_problem(self.workspace, m["test_path"])):
            m["test_path"] = f"tests/test_{PurePosixPath(m['path']).stem}.py"
        whole = complete_plan({"modules": usable, "decisions": [
            d.model_dump(mode="json") for d in output.decisions]}, spec)
        if not whole["modules"] or check_plan(plan := ProjectPlan.model_validate(whole),
                                              self.workspace):
            raise ModelRetry("Your plan cannot be used: "
                             + (check_plan(output, self.workspace) or "it has no module")
                             + ". Reply with the plan as a JSON object.")
        wrote = await self._packages(plan)
        kept = await self._passing(plan)
        plan = plan.model_copy(update={"kept": kept, "files": wrote}) if kept or wrote else plan
        return None if plan == output else plan

    async def _passing(self, plan: ProjectPlan) -> list[str]:
        """The planned modules the workspace already holds with their test files, which
        pass: a run on a workspace part built keeps them (a journaled step: a replay keeps
        what it kept)."""
        kept = []
        for m in plan.modules:
            if await asyncio.to_thread(self._holds, m.path, m.test_path) and (
                    await self.tests(m.test_path))["passed"]:
                kept.append(m.path)
        return kept

    async def _packages(self, plan: ProjectPlan) -> dict[str, str]:
        """Writes an empty ``__init__.py`` for each package of the plan's modules only
        where no file is (a user's own is never replaced; a re-run step writes nothing);
        returns what it wrote."""
        wrote = {}
        for init in package_inits([m.path for m in plan.modules]):
            if not await asyncio.to_thread(self._holds, init):
                with contextlib.suppress(WorkspaceError):  # a directory of that name: left
                    await self.workspace.write_file(init, "")
                    wrote[init] = ""
        return wrote

    def _holds(self, *paths: str) -> bool:
        try:
            return all(self.workspace.resolve(p).is_file() for p in paths)
        except WorkspaceError:
            return False

