"""The stock roles: architect, coder, reviewer — built only on orchestra's public API.

They share a :class:`~agents.workspace.Workspace`: every file tool is confined
to it, and the reviewer's verdict is checked against a real pytest run, so a
model that approves failing code is told so and must revise its review.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Any

from pydantic import BaseModel, Field

from agents.checks import check_plan, check_written, code_problem, python_problem
from agents.testrunner import TestReport, run_pytest
from agents.workspace import Workspace, WorkspaceError
from orchestra import ModelRetry, ModelSettings, Role, SlidingWindow, ToolContext, tool


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


class Decision(BaseModel):
    """A design choice for this project (not a description of a tool)."""

    decision: str = Field(description="a design choice for this project")
    reason: str = Field(description="why it was made")


class ProjectPlan(BaseModel):
    """The architect's plan: modules to build and the decisions behind them."""

    modules: list[ModuleSpec] = Field(min_length=1)
    decisions: list[Decision] = Field(default_factory=list)


class CodeResult(BaseModel):
    """What the coder did for one module: the code itself, or the files it wrote."""

    # The code first and required: a constrained decoder emits required fields in order;
    # with optional code fields a small model wrote a summary and stopped, and after a
    # "module": "<path>" field it typed paths into the code fields too.
    module_code: str = Field(description="the module's complete Python source code (empty "
                                         "only if you wrote the file with write_file)")
    test_code: str = Field(description="the complete Python source of its pytest file (empty "
                                       "only if you wrote it with write_file)")
    summary: str = Field(description="what was implemented and tested")
    module: str = Field(default="", description="the module path")
    files: list[str] = Field(default_factory=list,
                             description="paths of files already written with write_file")

    def written(self, task_input: Any) -> list[str]:
        """Every file this result stands for: those written with write_file, and the
        module and test files its code fields fill (at the task's own paths)."""
        module, tests = [*_module_files(task_input), "", ""][:2]
        out = list(self.files)
        for path, code in ((module, self.module_code), (tests, self.test_code)):
            if path and code.strip() and path not in out:
                out.append(path)
        return out


class Review(BaseModel):
    """The reviewer's verdict on one module."""

    module: str
    approved: bool
    comments: list[str] = Field(
        default_factory=list, description="concrete change requests when not approved"
    )


_TIMING = re.compile(r"\s+in \d+(?:\.\d+)?s\b")


def _module_files(task_input: Any) -> list[str]:
    """The module path and test path a coder task is about."""
    module = task_input.get("module") if isinstance(task_input, dict) else None
    if not isinstance(module, dict):
        return []
    return [p for p in (module.get("path"), module.get("test_path")) if isinstance(p, str)]


class WorkspaceRole(Role):
    """Roles that read and write a workspace."""

    recall = True

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace

    @tool
    async def list_files(self, ctx: ToolContext, path: str = ".") -> list[str]:
        """List files under a directory of the workspace (recursive)."""
        return await self.workspace.list_files(path)

    @tool
    async def read_file(self, ctx: ToolContext, path: str) -> str:
        """Read a text file of the workspace."""
        return await self.workspace.read_file(path)

    async def tests(self, target: str | None, limit_s: float = 60.0) -> dict[str, Any]:
        report: TestReport = await run_pytest(self.workspace.root, target, timeout=limit_s)
        # timings vary run to run; the model gets a stable view (replays stay exact)
        output = _TIMING.sub("", report.output).replace(str(self.workspace.root), ".")
        return {
            "passed": report.passed,
            "tests_passed": report.tests_passed,
            "tests_failed": report.tests_failed,
            "tests_errors": report.tests_errors,
            "timed_out": report.timed_out,
            "output": output,
        }


class TestingRole(WorkspaceRole):
    """Workspace roles that may also run the workspace's tests for real."""

    __test__ = False  # not a pytest test class, despite the name

    @tool
    async def run_tests(self, ctx: ToolContext, path: str) -> dict[str, Any]:
        """Run pytest on a test file or directory of the workspace."""
        return await self.tests(path)


class Architect(WorkspaceRole):
    """You are the architect of a small Python project. Read the spec you are given
    (workspace_files lists the files the workspace already has; read one with read_file
    only if you need it), then reply with the plan as a JSON object: the modules to
    build (path, purpose, public_api, test_path) and your key decisions with their
    reasons. Keep modules small and independent; one test file per module."""

    name = "architect"
    output = ProjectPlan
    settings = ModelSettings(max_tokens=1500)  # a runaway reply stops early, not at a timeout
    concurrency = 1

    async def check_output(self, ctx: ToolContext, output: Any) -> None:
        """The plan's paths are inside the workspace and the ones the spec names."""
        spec = (ctx.task_input or {}).get("spec")
        problem = check_plan(output, spec if isinstance(spec, str) else "", self.workspace)
        if problem:
            raise ModelRetry(f"Your plan cannot be used: {problem}")


class Coder(TestingRole):
    """You are a careful Python developer. You implement exactly one module of a plan and
    its pytest tests. Reply with a JSON object: module_code (the module's complete Python
    source), test_code (its complete pytest file, importing the module by its dotted
    path) and summary. If you get review comments, revise the code to address every one
    and reply with the complete new sources. (You may instead write the files with
    write_file and list their paths in files.)"""

    name = "coder"
    output = CodeResult
    settings = ModelSettings(max_tokens=3000)
    compaction = SlidingWindow(last=24)
    concurrency = 1

    @tool
    async def write_file(self, ctx: ToolContext, path: str, content: str) -> dict[str, Any]:
        """Create or replace a text file in the workspace."""
        result = await self.workspace.write_file(path, content)
        # a weak model needs to be told at once what is wrong and what comes next
        problem = python_problem(path, content)
        if problem:
            result["problem"] = f"{problem}; write the file again, fixed"
        # from the path alone, not from what exists: calls of one turn run concurrently,
        # and a replay must see the same result whatever order they finished in
        files = _module_files(ctx.task_input)
        if len(files) == 2:
            module, tests = (str(PurePosixPath(f)) for f in files)
            written = str(PurePosixPath(path))
            result["next"] = (
                f"write its tests at {tests} unless done, then give your final answer"
                if written == module else
                f"write the module itself at {module} unless done, then give your final answer"
                if written == tests else f"this task's files are {module} and {tests}")
        return result

    async def check_output(self, ctx: ToolContext, output: Any) -> None:
        """Writes the code the answer carries; then the files the answer stands for, and
        the module and its tests, must exist as valid code.

        This runs as a journaled step: the writes are whole-file replacements of the
        answer's own text, so a step re-run after a crash writes the same bytes."""
        required = _module_files(ctx.task_input)
        for path, code, what in zip(required, (output.module_code, output.test_code),
                                    ("module_code", "test_code"), strict=False):
            if not code.strip():
                continue
            problem = code_problem(path, code, tests=what == "test_code")
            if problem:
                raise ModelRetry(f"Your {what} is {problem}. Reply again with it fixed.")
            await self.workspace.write_file(path, code)
        problem = await check_written(self.workspace, output.written(ctx.task_input),
                                      required)
        if problem:
            raise ModelRetry(f"Your answer cannot be accepted: {problem}")


class Reviewer(TestingRole):
    """You review one module: run its tests with run_tests, read the code, and decide.
    Approve only if the tests pass and the code meets the spec. Otherwise request
    changes with concrete comments (what fails, where, how to fix). Reply with a JSON
    object: module, approved, comments."""

    name = "reviewer"
    output = Review
    settings = ModelSettings(max_tokens=1000)
    compaction = SlidingWindow(last=12)
    concurrency = 1

    async def check_output(self, ctx: ToolContext, output: Any) -> None:
        """An approval must be backed by a real passing test run; a rejection must say
        what to change (the coder gets nothing else to act on)."""
        if isinstance(output, Review) and not output.approved and not any(
                c.strip() for c in output.comments):
            raise ModelRetry("You requested changes without saying which: give concrete "
                             "comments (what fails, where, how to fix), or approve.")
        if isinstance(output, Review) and output.approved:
            test_path = (ctx.task_input or {}).get("module", {}).get("test_path")
            try:
                result = await self.tests(test_path if isinstance(test_path, str) else None)
            except WorkspaceError as exc:  # e.g. the coder never wrote the test file
                raise ModelRetry(f"You approved, but the tests cannot run: {exc}. Request "
                                 "changes instead, with concrete comments.") from None
            if not result["passed"]:
                raise ModelRetry(
                    "You approved, but the tests fail:\n"
                    + str(result["output"])[-1500:]
                    + "\nRequest changes instead, with concrete comments."
                )
