"""The tester, the coder and the reviewer, split as AgentCoder splits them: tests from
the spec alone (never from the code), code tried against them for real, and a reviewer
that says which of the two is wrong against the spec when they disagree.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import BaseModel

from agents.briefs import report_tail, reviewer_brief, tester_brief
from agents.checks import code_problem, dotted, imports_module
from agents.coder import Coder
from agents.codereply import complete_part, complete_statements
from agents.imports_fix import add_missing_imports
from agents.inputs import ModuleTask, module_task
from agents.moduletask import cases_file, trusted
from agents.probe import mentions
from agents.roles import Review, TestsAnswer, WorkspaceRole
from agents.specread import api_name
from agents.testsplit import failed_tests, guard_imports, split_tests
from agents.workspace import WorkspaceError
from orchestra import ModelRetry, ModelSettings, SlidingWindow, ToolContext
from orchestra.answers import FileBlocks

__all__ = ["Coder", "Reviewer", "Tester"]


@dataclass(frozen=True)
class _TestBlocks(FileBlocks):
    """The test file as a fenced block; one cut off at the token limit keeps its complete
    tests (:func:`agents.codereply.complete_part`), or where none is complete, the
    complete statements of the test it was cut in, and says so: the tester asks for the
    rest of what no kept test calls."""

    def parse(self, text: str, *, truncated: bool, task_input: Any) -> BaseModel:
        if not truncated:
            return super().parse(text, truncated=truncated, task_input=task_input)
        kept = complete_part(text) or complete_statements(text)
        if kept is None:
            return self.output.model_validate({"text": text, "cut_off": True, "files": {
                module_task(task_input).test_path: ""}})
        answer = super().parse(kept, truncated=False, task_input=task_input)
        return answer.model_copy(update={"cut_off": True})


def _joined(kept: str, rest: str) -> str:
    """The tests kept from a reply cut off, then the rest (a name taken twice renamed)."""
    if not kept.strip():
        return rest
    try:
        names = {n.name for n in ast.parse(kept).body if isinstance(n, ast.FunctionDef)}
        tree = ast.parse(rest)
    except SyntaxError:
        return kept
    lines = rest.split("\n")
    for fn in tree.body:
        if isinstance(fn, ast.FunctionDef) and fn.name in names:
            lines[fn.lineno - 1] = lines[fn.lineno - 1].replace(
                f"def {fn.name}(", f"def {fn.name}_rest(", 1)
    return kept.rstrip("\n") + "\n\n\n" + "\n".join(lines)


def _untested(task: ModuleTask, tests: str) -> bool:
    """A reply cut off has something left to ask for: no complete test, or a public name
    of the module that no kept test calls. Where every name is called, the rest is not
    asked: a small model's rest ran on to the cap again (HumanEval/81 with the 1.5B: two
    replies of 2,048 tokens, six minutes, for one function already tested)."""
    names = [api_name(sig).split(".")[-1] for sig in task.module.public_api]
    return not tests.strip() or not names or not all(mentions(tests, [n]) for n in names)


class Tester(WorkspaceRole):
    """You write the pytest tests of one Python module from its spec alone: you never see
    the module's code. Test exactly what the spec states: every example it gives, as an
    assert with the spec's own input and expected value, and every error it says is
    raised (with pytest.raises). Do not invent expected values the spec does not give:
    a wrong test is worse than none. Import the module's names as the task says. Keep
    the tests short and plain: one test function per rule."""

    name = "tester"
    input = ModuleTask
    answer = _TestBlocks(paths=lambda task_input: [module_task(task_input).test_path],
                         output=TestsAnswer)
    # what a test file needs (at 800 tokens the 1.5B was cut off before its first test)
    settings = ModelSettings(max_tokens=2048, temperature=0.0)
    compaction = SlidingWindow(last=12)
    output_retries = 4
    concurrency = 1
    fallback_after: ClassVar[int] = 3
    """Unusable test files after which the spec's own examples are the tests, alone (none
    when it states none): tests are probes, and a failed tester would stop the run."""

    def render_task(self, task_input: Any) -> str:
        return tester_brief(task_input)

    async def check_output(self, ctx: ToolContext, output: Any) -> Any:
        """A test file that parses, defines tests and imports the module (its expected
        values are probes, never a gate), written to the workspace and returned, so the
        journal holds every file a check wrote."""
        task = module_task(ctx.task_input)
        path, test_path = task.path, task.test_path
        kept = next((str(r.data["kept"]) for r in ctx.rejections
                     if isinstance(r.data, dict) and "kept" in r.data), None)
        text = add_missing_imports(output.files[test_path]) if output.files[
            test_path].strip() else ""
        if kept is not None:  # the rest of a reply cut off
            text = _joined(kept, text)
        elif output.cut_off and not self.out_of_time(task.until) and _untested(task, text):
            raise ModelRetry(
                "Your reply was cut off at the token limit"
                + (" after the tests kept above" if text else " before one complete test")
                + f". Reply with {test_path} holding only the tests not written yet (with "
                "its imports), shorter: one plain test function per rule.",
                data={"kept": text})
        try:
            self._usable(task, text)
        except ModelRetry:
            if (kept is None and len(ctx.rejections) + 1 < type(self).fallback_after
                    and not self.out_of_time(task.until)):
                raise
            text = cases_file(task, "")  # none at all: the coder runs the module anyway
        else:
            # one test per check (a wrong one fails alone), then the spec's own examples
            text = cases_file(task, split_tests(guard_imports(text, dotted(path))))
        await self.workspace.write_file(test_path, text)
        return output.model_copy(update={"files": {test_path: text}})

    @classmethod
    def _usable(cls, task: ModuleTask, text: str) -> None:
        """Raise ModelRetry saying why ``text`` is no tests of the module at all."""
        path, test_path = task.path, task.test_path
        problem = code_problem(test_path, text, tests=True)
        if problem:
            raise ModelRetry(f"Your test file is {problem}. Reply with it fixed, complete.")
        if not imports_module(text, path):
            raise ModelRetry(f"Your tests do not import the module: write "
                             f"`from {dotted(path)} import ...` at the top, then test it.")


class Reviewer(WorkspaceRole):
    """You review one Python module against its spec. You get the spec, the module's
    code, its tests and the real pytest report. Approve only if the tests pass and the
    code does what the spec says. Otherwise say which one is wrong against the spec:
    the code ("fix": "code") or the tests ("fix": "tests", for instance a test that
    expects a value the spec does not give), with concrete comments: what is wrong,
    where, and how to fix it. Reply with a JSON object: module, approved, fix,
    comments."""

    name = "reviewer"
    input = ModuleTask
    output = Review
    settings = ModelSettings(max_tokens=800, temperature=0.0)
    compaction = SlidingWindow(last=12)
    concurrency = 1

    def render_task(self, task_input: Any) -> str:
        return reviewer_brief(task_input)

    async def check_output(self, ctx: ToolContext, output: Any) -> None:
        """An approval stands unless a test the spec vouches for fails in a real run; a
        rejection must say what to change (the next role gets nothing else to act on)."""
        if not output.approved:
            if not any(c.strip() for c in output.comments):
                raise ModelRetry("You requested changes without saying which: give concrete "
                                 "comments (what fails, where, how to fix), or approve.")
            return
        task = module_task(ctx.task_input)
        try:
            result = await self.tests(task.test_path or None)
            tests = await self.workspace.read_file(task.test_path)
        except WorkspaceError as exc:  # e.g. the test file was never written
            raise ModelRetry(f"You approved, but the tests cannot run: {exc}. Request "
                             "changes instead, with concrete comments.") from None
        failed = failed_tests(str(result["output"]))
        ran = result["tests_passed"] + result["tests_failed"] + result["tests_errors"]
        if not result["passed"] and (failed & trusted(tests) or (not failed and (
                ran or result["timed_out"]))):  # no test at all vetoes nothing
            raise ModelRetry("You approved, but tests the spec vouches for fail:\n"
                             + report_tail(result) + "\nRequest changes instead: say "
                             "whether the code or the tests are wrong against the spec, "
                             "with concrete comments.")
