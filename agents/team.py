"""The tester, the coder and the reviewer of the software pipeline.

AgentCoder's split, for models small and large: the tester writes a module's tests
from the spec alone (never from the code), with every example the spec states; the
coder writes the module as a fenced file, and its own task runs those tests for real
and gives the failures back as its next turn, keeping the best answer when its test
rounds run out; the reviewer gets the code, the tests and the real report, and says
which one is wrong against the spec when they disagree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import BaseModel

from agents.briefs import report_tail, reviewer_brief, tester_brief
from agents.checks import (
    code_problem,
    dotted,
    imports_module,
    missing_examples,
    spec_examples,
    spec_section,
)
from agents.coder import Coder, _missing_import
from agents.imports_fix import add_missing_imports
from agents.inputs import ModuleTask, module_task
from agents.moduletask import cases, cases_file
from agents.roles import Review, TestsAnswer, WorkspaceRole
from agents.speccases import case_strings
from agents.testsplit import guard_imports, salvage, split_tests
from agents.workspace import WorkspaceError
from orchestra import ModelRetry, ModelSettings, SlidingWindow, ToolContext
from orchestra.answers import FileBlocks

__all__ = ["Coder", "Reviewer", "Tester", "_missing_import"]


def _test_path(task_input: Any) -> list[str]:
    return [module_task(task_input).test_path]


@dataclass(frozen=True)
class _TestBlocks(FileBlocks):
    """The test file as a fenced block; one cut off at the token limit keeps its complete
    tests (see :func:`agents.testsplit.salvage`), and when none is complete the tests
    are the spec's examples (or that the module imports): another try would cost as
    many tokens and be cut off too, while the module waits for its tests."""

    def parse(self, text: str, *, truncated: bool, task_input: Any) -> BaseModel:
        if truncated:
            kept = salvage(text)
            if kept is not None:
                return super().parse(kept, truncated=False, task_input=task_input)
            task = module_task(task_input)
            return self.output.model_validate({"text": CUT_OFF, "files": {
                task.test_path: cases_file(task, "") or _smoke_tests(task.path)}})
        return super().parse(text, truncated=truncated, task_input=task_input)


CUT_OFF = "(cut off at the token limit before one complete test: the spec's examples instead)"


def _smoke_tests(path: str) -> str:
    """Tests of last resort: the module imports as its users import it."""
    return (f"import {dotted(path)}\n\n\ndef test_the_module_imports():\n"
            f"    assert {dotted(path)} is not None\n")


class Tester(WorkspaceRole):
    """You write the pytest tests of one Python module from its spec alone: you never see
    the module's code. Test exactly what the spec states: every example it gives, as an
    assert with the spec's own input and expected value, and every error it says is
    raised (with pytest.raises). Do not invent expected values the spec does not give:
    a wrong test is worse than none. Import the module's names as the task says. Keep
    the tests short and plain: one test function per rule."""

    name = "tester"
    input = ModuleTask
    answer = _TestBlocks(paths=_test_path, output=TestsAnswer)
    # short on purpose: a small model left alone enumerates a table of cases until the
    # limit (seen: 1,500 tokens of parametrize rows, four minutes, for one function)
    settings = ModelSettings(max_tokens=800, temperature=0.0)
    compaction = SlidingWindow(last=12)
    output_retries = 4
    concurrency = 1
    example_rounds: ClassVar[int] = 2
    """Times tests that leave out a spec example are sent back; then they are taken as
    they are (tests with gaps beat no tests: a failed tester would stop the run)."""
    fallback_after: ClassVar[int] = 3
    """Unusable test files after which the spec's own examples are the tests, alone
    (when the spec states any): a run goes on with tests it can trust."""

    def render_task(self, task_input: Any) -> str:
        return tester_brief(task_input)

    async def check_output(self, ctx: ToolContext, output: Any) -> Any:
        """A test file that imports the module and asserts every example the spec
        gives for it; then it is written to the workspace (and the answer returned, so
        the journal holds every file a check wrote)."""
        task = module_task(ctx.task_input)
        path, test_path = task.path, task.test_path
        if output.text == CUT_OFF:  # already the spec's own tests
            await self.workspace.write_file(test_path, output.files[test_path])
            return output
        text = add_missing_imports(output.files[test_path])
        # the same tests sent back after a nudge for examples: taken (it will not add them)
        again = any(isinstance(r.data, dict) and r.data.get("tests") == text
                    for r in ctx.rejections)
        rounds = type(self).example_rounds if again else len(ctx.rejections)
        try:
            self._usable(task, text, rounds, self.out_of_time(task.until))
        except ModelRetry:
            if (len(ctx.rejections) + 1 < type(self).fallback_after
                    and not self.out_of_time(task.until)):
                raise
            # the spec's examples alone (or, when it states none, a test that the module
            # imports) beat a run stopped here
            text = cases_file(task, "") or _smoke_tests(path)
        else:
            # one test per check (a wrong one fails alone), then the spec's own examples
            text = cases_file(task, split_tests(guard_imports(text, dotted(path))))
        await self.workspace.write_file(test_path, text)
        return output.model_copy(update={"files": {test_path: text}})

    @classmethod
    def _usable(cls, task: ModuleTask, text: str, rejected: int, out_of_time: bool) -> None:
        """Raise ModelRetry saying what keeps ``text`` from being the module's tests."""
        path, test_path = task.path, task.test_path
        problem = code_problem(test_path, text, tests=True)
        if problem:
            raise ModelRetry(f"Your test file is {problem}. Reply with it fixed, complete.")
        if not imports_module(text, path):
            raise ModelRetry(f"Your tests do not import the module: write "
                             f"`from {dotted(path)} import ...` at the top, then test it.")
        # examples the pipeline writes as tests itself need not be asked for again
        written = case_strings(cases(task))
        stated = task.stated.examples if task.stated else spec_examples(
            spec_section(task.spec, path))
        missing = [e for e in missing_examples(text, stated) if e not in written]
        if missing and rejected < cls.example_rounds and not out_of_time:
            shown = ", ".join(repr(m) for m in missing[:8])
            raise ModelRetry(f"Your tests leave out examples the spec states: {shown}. Add "
                             "a test that asserts each example exactly as the spec gives it, "
                             "and reply with the complete file.", data={"tests": text})


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
        """An approval must be backed by a real passing test run; a rejection must say
        what to change (the next role gets nothing else to act on)."""
        if not output.approved:
            if not any(c.strip() for c in output.comments):
                raise ModelRetry("You requested changes without saying which: give concrete "
                                 "comments (what fails, where, how to fix), or approve.")
            return
        test_path = module_task(ctx.task_input).test_path
        try:
            result = await self.tests(test_path or None)
        except WorkspaceError as exc:  # e.g. the test file was never written
            raise ModelRetry(f"You approved, but the tests cannot run: {exc}. Request "
                             "changes instead, with concrete comments.") from None
        if not result["passed"]:
            raise ModelRetry("You approved, but the tests fail:\n" + report_tail(result)
                             + "\nRequest changes instead: say whether the code or the "
                             "tests are wrong against the spec, with concrete comments.")
