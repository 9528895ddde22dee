"""The tester, the coder and the reviewer of the software pipeline.

AgentCoder's split, for models small and large: the tester writes a module's tests
from the spec alone (never from the code), with every example the spec states; the
coder writes the module as a fenced file, and its own task runs those tests for real
and gives the failures back as its next turn, keeping the best answer when its test
rounds run out; the reviewer gets the code, the tests and the real report, and says
which one is wrong against the spec when they disagree.
"""

from __future__ import annotations

from typing import Any, ClassVar

from agents.briefs import coder_brief, report_tail, reviewer_brief, tester_brief
from agents.checks import (
    api_problem,
    code_problem,
    dotted,
    imports_module,
    missing_examples,
    spec_errors,
    spec_examples,
    spec_paths,
    spec_section,
    spec_signatures,
)
from agents.failures import how_it_failed
from agents.imports_fix import add_missing_imports
from agents.roles import CodeAnswer, Review, TestsAnswer, WorkspaceRole
from agents.speccases import CASE_PREFIX, SpecCase, add_cases, case_strings, spec_cases
from agents.testsplit import failed_tests, split_tests, trusted_tests
from agents.workspace import WorkspaceError
from orchestra import ModelRetry, ModelSettings, SlidingWindow, ToolContext
from orchestra.answers import EditBlocks, EditError, FileBlocks, apply_edits

__all__ = ["Coder", "Reviewer", "Tester"]


def _module(task_input: Any) -> dict[str, Any]:
    module = task_input.get("module") if isinstance(task_input, dict) else None
    return module if isinstance(module, dict) else {}


def _module_path(task_input: Any) -> list[str]:
    return [str(_module(task_input).get("path", ""))]


def _test_path(task_input: Any) -> list[str]:
    return [str(_module(task_input).get("test_path", ""))]


def _summary(report: dict[str, Any]) -> dict[str, Any]:
    """What a report says, kept small enough to travel in handoffs and the journal."""
    return {k: report.get(k) for k in ("passed", "tests_passed", "tests_failed",
                                       "tests_errors", "timed_out")} | {
        "output": report_tail(report)}


def _first_failure(report: dict[str, Any]) -> str:
    """The first ``FAILED``/``ERROR`` line of a pytest report ('' when none)."""
    for line in str(report.get("output", "")).splitlines():
        if line.startswith(("FAILED ", "ERROR ")):
            return line[:300]
    return ""


def _first(report: dict[str, Any]) -> str:
    failure = _first_failure(report)
    return f" (the first failure: {failure})" if failure else ""


def _score(report: dict[str, Any], trusted: frozenset[str] | set[str] = frozenset()
           ) -> list[int]:
    """[tests passed, tests run, tests the spec vouches for that passed, of those the
    ones written from the spec's own words that passed]."""
    passed = int(report.get("tests_passed") or 0)
    total = passed + int(report.get("tests_failed") or 0) + int(report.get("tests_errors") or 0)
    out = str(report.get("output", ""))
    failed = failed_tests(out)
    ok = trusted - failed if total else set()
    return [passed, total, len(ok), sum(1 for t in ok if t.startswith(CASE_PREFIX))]


def _rank(candidate: dict[str, Any]) -> tuple[int, ...]:
    """Best first: the most of the spec's own examples (tests the pipeline wrote from its
    words: no model can have them wrong), then the most tests the spec vouches for
    (a tester's test holding an example value may still expect a wrong one: seen,
    ``fizzbuzz(15) == ['FizzBuzz']``), then the most tests."""
    score = [*candidate["score"], 0, 0]
    return (score[3], score[2], score[0])


def _spec_failures(report: dict[str, Any], task_input: dict[str, Any]) -> str:
    """The spec's own examples a test run failed, said first in the feedback: among many
    failures (some of them a tester's errors) a small model fixes none."""
    out = str(report.get("output", ""))
    failed = failed_tests(out)
    cases = _cases(task_input)
    lines = [f"- {c.call} should {'raise ' + c.error if c.error else 'be ' + str(c.expected)}"
             + (f"; got: {got}" if (got := how_it_failed(out, f"{CASE_PREFIX}{n}")) else "")
             for n, c in enumerate(cases, 1) if f"{CASE_PREFIX}{n}" in failed]
    return ("These examples, stated by the spec itself, fail; fix them first:\n"
            + "\n".join(lines) + "\n\n") if lines else ""


def _trusted(tests: str, task_input: dict[str, Any], path: str) -> set[str]:
    section = spec_section(str(task_input.get("spec") or ""), path)
    return trusted_tests(tests, spec_examples(section), spec_errors(section),
                         prefix=CASE_PREFIX)


def _cases(task_input: dict[str, Any]) -> list[SpecCase]:
    """The examples the spec states for the task's module, as cases."""
    module = _module(task_input)
    section = spec_section(str(task_input.get("spec") or ""), str(module.get("path")))
    return spec_cases(section, module.get("public_api") or [])


def _cases_file(task_input: dict[str, Any], text: str) -> str:
    """``text`` with the examples the spec states appended as tests of their own."""
    return add_cases(text, _cases(task_input), dotted(str(_module(task_input).get("path"))))


class Tester(WorkspaceRole):
    """You write the pytest tests of one Python module from its spec alone: you never see
    the module's code. Test exactly what the spec states: every example it gives, as an
    assert with the spec's own input and expected value, and every error it says is
    raised (with pytest.raises). Do not invent expected values the spec does not give:
    a wrong test is worse than none. Import the module's names as the task says. Keep
    the tests short and plain: one test function per rule."""

    name = "tester"
    answer = FileBlocks(paths=_test_path, output=TestsAnswer)
    # short on purpose: a small model left alone enumerates a table of cases until the
    # limit (seen: 1,500 tokens of parametrize rows, four minutes, for one function)
    settings = ModelSettings(max_tokens=1000)
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
        task_input = ctx.task_input if isinstance(ctx.task_input, dict) else {}
        module = _module(task_input)
        path, test_path = str(module.get("path")), str(module.get("test_path"))
        text = add_missing_imports(output.files[test_path])
        # the same tests sent back after a nudge for examples: taken (it will not add them)
        again = any(isinstance(r.data, dict) and r.data.get("tests") == text
                    for r in ctx.rejections)
        rounds = type(self).example_rounds if again else len(ctx.rejections)
        try:
            self._usable(path, test_path, text, task_input, rounds, self.out_of_time())
        except ModelRetry:
            fallback = _cases_file(task_input, "")
            if not fallback or (len(ctx.rejections) + 1 < type(self).fallback_after
                                and not self.out_of_time()):
                raise
            text = fallback  # the spec's examples alone beat a run stopped here
        else:
            # one test per check (a wrong one fails alone), then the spec's own examples
            text = _cases_file(task_input, split_tests(text))
        await self.workspace.write_file(test_path, text)
        return output.model_copy(update={"files": {test_path: text}})

    @classmethod
    def _usable(cls, path: str, test_path: str, text: str, task_input: dict[str, Any],
                rejected: int, out_of_time: bool) -> None:
        """Raise ModelRetry saying what keeps ``text`` from being the module's tests."""
        problem = code_problem(test_path, text, tests=True)
        if problem:
            raise ModelRetry(f"Your test file is {problem}. Reply with it fixed, complete.")
        if not imports_module(text, path):
            raise ModelRetry(f"Your tests do not import the module: write "
                             f"`from {dotted(path)} import ...` at the top, then test it.")
        spec = str(task_input.get("spec") or "")
        # examples the pipeline writes as tests itself need not be asked for again
        written = case_strings(_cases(task_input))
        missing = [e for e in missing_examples(text, spec_examples(spec_section(spec, path)))
                   if e not in written]
        if missing and rejected < cls.example_rounds and not out_of_time:
            shown = ", ".join(repr(m) for m in missing[:8])
            raise ModelRetry(f"Your tests leave out examples the spec states: {shown}. Add "
                             "a test that asserts each example exactly as the spec gives it, "
                             "and reply with the complete file.", data={"tests": text})


class Coder(WorkspaceRole):
    """You are a careful Python developer. You write one module of a project exactly as
    the spec and the plan describe it: every public function or class at module level,
    with the names and parameters given, and the exact values and errors the spec
    states. Use only the standard library. When you are told that tests fail, find the
    cause in your code and fix it; where a test contradicts the spec, follow the spec."""

    name = "coder"
    answer = EditBlocks(paths=_module_path, output=CodeAnswer, whole_files_first=True)
    settings = ModelSettings(max_tokens=2000)
    compaction = SlidingWindow(last=12)
    output_retries = 8
    concurrency = 1
    keep_best_after: ClassVar[int] = 6
    """Answers sent back after which an unusable one ends the task with the best tested
    answer (below ``output_retries``, which would fail the attempt and lose them)."""
    test_rounds: ClassVar[int] = 4
    """Answers whose tests run within one task; the best of them is kept. They
    alternate: the first, a revision in view of its failures, a new sample of the
    task afresh (a small model's revisions often repeat its answer; another sample
    often passes where it did not), a revision of that one, ..."""

    def render_task(self, task_input: Any) -> str:
        return coder_brief(task_input)

    async def check_output(self, ctx: ToolContext, output: Any) -> Any:
        """Writes the module, runs its tests for real and sends failures back while
        test rounds remain; then keeps the answer that passed the most tests.

        A journaled step: the writes are whole files of recorded answers, so a step
        re-run after a crash writes the same bytes."""
        task_input = ctx.task_input if isinstance(ctx.task_input, dict) else {}
        module = _module(task_input)
        path, test_path = str(module.get("path")), str(module.get("test_path"))
        code = add_missing_imports(self._resolve(path, output, ctx), _project(task_input))
        tried = {"files": {path: code}}  # what the next edits apply to, if sent back
        problem = (code_problem(path, code, tests=False)
                   or api_problem(path, code, module.get("public_api") or [])
                   or _missing_import(code, task_input.get("uses") or []))
        earlier = [r.data for r in ctx.rejections
                   if isinstance(r.data, dict) and "score" in r.data]
        if problem and earlier and len(ctx.rejections) >= type(self).keep_best_after:
            # a late unusable answer ends the task with the best tested one: a failed
            # attempt would start over and lose them all
            return await self._keep_best(task_input, path, earlier, [])
        if problem:
            raise ModelRetry(f"Your module is not usable yet: {problem}. Reply with the "
                             f"complete corrected file in one fenced block labelled {path}.",
                             data=tried)
        await self.workspace.write_file(path, code)
        try:
            tests = await self.workspace.read_file(test_path)
        except WorkspaceError:
            return output.model_copy(update={"files": {path: code}, "report": {
                "passed": None, "output": "no tests exist for this module"}})
        report = _summary(await self.tests(test_path))
        trusted = _trusted(tests, task_input, path)
        mine = {"score": _score(report, trusted),
                "files": {path: code}, "text": output.text,
                "report": report}
        history = [{"score": d["score"], "failed": _first_failure(d["report"])}
                   for d in earlier]
        if report["passed"]:
            return output.model_copy(update={"files": {path: code}, "report": report,
                                             "tests": tests,
                                             "history": history})
        # past a revision, an answer that passes every test the spec vouches for goes to
        # the reviewer at once: its other failures may be the tester's errors (seen: a
        # tokenizer's tests expecting the evaluator's ZeroDivisionError), to be judged
        # against the spec, not chased for two more answers
        own = sum(1 for t in trusted if t.startswith(CASE_PREFIX))
        vouched = bool(earlier) and (mine["score"][3] == own > 0 if own else
                                     bool(trusted) and mine["score"][2] == len(trusted))
        if (len(earlier) + 1 < type(self).test_rounds and not self.out_of_time()
                and not vouched):
            passed, total = mine["score"][:2]
            if (len(earlier) + 1) % 2 == 0:  # a revision failed too: a new sample
                raise ModelRetry(
                    f"Write {path} again from the start, as a new version: an earlier "
                    f"version passed {passed} of its {total} tests{_first(report)}. Reply "
                    f"with the complete file in one fenced block labelled {path}.",
                    data=mine, fresh=True)
            raise ModelRetry(
                f"The tests in {test_path} ran against your module: {passed} of {total} "
                f"passed. {_spec_failures(report, task_input)}The end of pytest's report:\n"
                f"{report['output']}\n\nFind the cause "
                f"in {path} and fix it (where a test contradicts the spec, follow the spec). "
                f"Reply with the complete corrected file in one fenced block labelled {path}.",
                data=mine)
        return await self._keep_best(task_input, path, [*earlier, mine], [
            *history, {"score": mine["score"], "failed": _first_failure(report)}], mine)

    async def _keep_best(self, task_input: dict[str, Any], path: str,
                         candidates: list[dict[str, Any]], history: list[dict[str, Any]],
                         written: dict[str, Any] | None = None) -> CodeAnswer:
        """The answer that passed the most tests the spec vouches for, written back if
        it is not the one on disk; the first of equals: the round before (a revision that
        only made things worse does not replace it), then this task's answers in order."""
        best = max([*_previous_round(task_input, path), *candidates], key=_rank)
        if best is not written:
            await self.workspace.write_file(path, best["files"][path])
        tests = await self.workspace.read_file(str(_module(task_input).get("test_path")))
        return CodeAnswer(files=best["files"], text=best["text"], report=best["report"],
                          tests=tests, out_of_time=self.out_of_time(),
                          history=history or [{"score": c["score"], "failed": _first_failure(
                              c["report"])} for c in candidates])


    @staticmethod
    def _resolve(path: str, output: Any, ctx: ToolContext) -> str:
        """The module an answer stands for: its whole file, or its edits applied to the
        module as the model last saw it (its last answer sent back, else the task's
        current code). From the journal, never from the disk: a step re-run after a
        crash applies the same edits to the same text, so it writes the same bytes."""
        if path in output.files:
            return str(output.files[path])
        base = next((r.data["files"][path] for r in reversed(ctx.rejections)
                     if isinstance(r.data, dict) and path in (r.data.get("files") or {})),
                    (ctx.task_input or {}).get("current") or "")
        if not base:
            raise ModelRetry(f"{path} does not exist yet, so there is nothing to edit: reply "
                             f"with the complete file in one fenced block labelled {path}.")
        try:
            return apply_edits(path, str(base), output.edits)
        except EditError as exc:
            raise ModelRetry(f"Your edit cannot be applied: {exc}.") from None


def _previous_round(task_input: dict[str, Any], path: str) -> list[dict[str, Any]]:
    """The module a review sent back, as a candidate with its tested score: a revision
    that only makes things worse must not replace it."""
    current, report = task_input.get("current"), task_input.get("report")
    if not current or not isinstance(report, dict) or "tests_passed" not in report:
        return []
    trusted = _trusted(str(task_input.get("tests") or ""), task_input, path)
    return [{"score": _score(report, trusted), "files": {path: current}, "text": "",
             "report": report}]


def _project(task_input: dict[str, Any]) -> dict[str, str]:
    """The public names of the project's other modules (as the spec and the plan give
    them): name -> the dotted module to import it from."""
    spec, own = str(task_input.get("spec") or ""), str(_module(task_input).get("path"))
    others = [p for p in spec_paths(spec)[0] if p != own]
    out: dict[str, str] = {}
    for other in others:
        for sig in spec_signatures(spec, other, [p for p in others if p != other] + [own]):
            out.setdefault(sig.split("(")[0].strip(), dotted(other))
    for used in task_input.get("uses") or []:
        if isinstance(used, dict):
            for sig in used.get("public_api") or []:
                out.setdefault(str(sig).split("(")[0].strip(), dotted(str(used.get("path"))))
    return {name: mod for name, mod in out.items() if name.isidentifier()}


def _missing_import(code: str, uses: list[Any]) -> str:
    """Why ``code`` does not build on the modules the plan says it uses ('' if it does)."""
    for used in uses:
        other = str(used.get("path", "")) if isinstance(used, dict) else ""
        if other and not imports_module(code, other):
            names = ", ".join(str(s).split("(")[0].strip() for s in used.get("public_api") or [])
            return (f"the spec builds it on {other}: import from it (from {dotted(other)} "
                    f"import {names or '...'}) instead of writing that code again")
    return ""


class Reviewer(WorkspaceRole):
    """You review one Python module against its spec. You get the spec, the module's
    code, its tests and the real pytest report. Approve only if the tests pass and the
    code does what the spec says. Otherwise say which one is wrong against the spec:
    the code ("fix": "code") or the tests ("fix": "tests", for instance a test that
    expects a value the spec does not give), with concrete comments: what is wrong,
    where, and how to fix it. Reply with a JSON object: module, approved, fix,
    comments."""

    name = "reviewer"
    output = Review
    settings = ModelSettings(max_tokens=800)
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
        test_path = _module(ctx.task_input).get("test_path")
        try:
            result = await self.tests(test_path if isinstance(test_path, str) else None)
        except WorkspaceError as exc:  # e.g. the test file was never written
            raise ModelRetry(f"You approved, but the tests cannot run: {exc}. Request "
                             "changes instead, with concrete comments.") from None
        if not result["passed"]:
            raise ModelRetry("You approved, but the tests fail:\n" + report_tail(result)
                             + "\nRequest changes instead: say whether the code or the "
                             "tests are wrong against the spec, with concrete comments.")
