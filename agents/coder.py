"""The coder: writes one module; its own task imports each answer as its users will, runs
its tests and its calls for real, and does what :mod:`agents.decide` says. The first
request is the one a user makes of the model once, so its answer is the floor; only an
answer that is no module at all is sent back unwritten.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from typing import Any, ClassVar

from agents.briefs import coder_rounds
from agents.checks import DEFINITIONS, code_problem, dotted, parsed
from agents.coderasks import (
    ONE_SHOT_SYSTEM,
    how_it_did,
    module_request,
    revision,
    spec_failures,
)
from agents.codereply import CodeBlocks
from agents.compose import Answer, compose
from agents.decide import Tried, best, decide, passes
from agents.importcheck import check_import
from agents.imports_fix import absolute_imports, add_missing_imports, usable_prefix
from agents.inputs import ModuleTask, module_task
from agents.moduletask import first_failure, score, summary, trusted
from agents.probe import calls_in_tests, mentions, run_calls
from agents.roles import CodeAnswer, WorkspaceRole
from agents.scaffold import without_tests
from agents.smoke import smoke_calls
from agents.specread import api_name, import_names
from agents.stubs import stubs
from agents.testsplit import failed_tests
from agents.workspace import WorkspaceError
from orchestra import ModelRetry, ModelSettings, TaskWindow, ToolContext
from orchestra.runtime.retry_sampling import SAMPLE_TEMPERATURE

__all__ = ["Coder"]

_AS_WRITTEN = ".orchestra/as-written/"
"""Where a module's answer as the model wrote it is kept beside the module as written."""


_STOPS = ("\ndef test_", "\nif __name__")
"""Where a module ends for the coder: tests a small model writes after it are taken out
of every answer anyway (:func:`agents.scaffold.without_tests`), a main block never runs
on import, and both ran to minutes: on HumanEval with the 1.5B, a third of what coders
wrote came after one, up to the token cap (1,849 tokens of asserts after a 250-token
function). What comes before is the same text (a stop changes no token before it)."""


def _stops(task: ModuleTask) -> tuple[str, ...]:
    """:data:`_STOPS`, but not one the module's own public names would meet."""
    names = [api_name(sig) for sig in task.module.public_api]
    return tuple(s for s in _STOPS
                 if not any(f"\ndef {n}".startswith(s) for n in names))


class Coder(WorkspaceRole):
    """Writes one module: asked once as a user asks (the floor), then revised or sampled
    again on what running the answers showed."""

    name = "coder"
    instructions = ONE_SHOT_SYSTEM
    input = ModuleTask
    answer = CodeBlocks(paths=lambda task_input: [module_task(task_input).path],
                        output=CodeAnswer)
    # the first answer greedy and computed cold, as the one-shot baseline's (a llama.cpp
    # prompt cache changes a greedy answer); later ones are warmer
    settings = ModelSettings(max_tokens=2000, temperature=0.0, prompt_cache=False)
    compaction = TaskWindow(last=12)  # each module asked as if it were the first
    output_retries = 8
    concurrency = 1
    keep_best_after: ClassVar[int] = 6
    """Answers sent back after which an unusable one ends the task with the best tested
    answer (below ``output_retries``, which would fail the attempt and lose them)."""
    last_tries: ClassVar[int] = 2
    """Unusable answers after which a module with none usable gives up once the run's
    time budget is spent (a 0.5B model kept a run 5 minutes past it, trying)."""
    test_rounds: ClassVar[int] = 4
    """Answers whose tests run within one task; the best of them is kept."""

    def render_task(self, task_input: Any) -> str:
        """Every round asks as a user asks the model once
        (:func:`agents.coderasks.module_request`), a round a review sent back with what
        it adds."""
        task = module_task(task_input)
        return module_request(task.spec, task.path, self._written(task.before),
                              coder_rounds(task))

    def render_sample(self, task_input: Any) -> str | None:
        """A new sample is asked as the first round asks, without the module in view
        (seen: a 1.5B asked again in view of its module sent it back byte for byte, three
        times at 0.7), so that sampling draws what the one-shot samples draw."""
        task = module_task(task_input)
        if task.round <= 1 or not task.current:
            return None
        return module_request(task.spec, task.path, self._written(task.before))

    def _written(self, paths: list[str]) -> dict[str, str]:
        """The modules built before this one that the workspace holds when the task starts,
        each as the model wrote it where that answer is what it holds (as the baseline
        shows it: a module tidied differently asks a 0.5B another question)."""
        out: dict[str, str] = {}
        for path in paths:
            try:
                out[path] = self.workspace.resolve(path).read_text()
                shown = json.loads(self.workspace.resolve(_AS_WRITTEN + path).read_text())
            except (OSError, UnicodeDecodeError, WorkspaceError, ValueError):
                continue
            if isinstance(shown, dict) and shown.get("file") == out[path]:
                out[path] = str(shown.get("raw"))
        return out

    def _theirs(self, task: ModuleTask) -> dict[str, str]:
        """The public names of the modules it builds on, then of those built before it (a
        fallback plan lists no uses; seen: a 0.5B's evaluator called ``tokenize`` unimported):
        name -> the module to import it from."""
        out = _project(task)
        for path in task.before:
            with contextlib.suppress(OSError, UnicodeDecodeError, WorkspaceError):
                for name in _defined(self.workspace.resolve(path).read_text()):
                    out.setdefault(name, dotted(path))
        return out

    def settings_for(self, task_input: Any) -> ModelSettings | None:
        """A round a review sent back samples warm (a 1.5B model asked greedily sent the
        same file back), seeded by the round so a resumed task asks alike. Every reply
        ends where tests or a main block would begin (:func:`_stops`)."""
        task = module_task(task_input)
        settings = type(self).settings
        if settings is None:
            return None
        settings = dataclasses.replace(settings, stop=_stops(task))
        if task.round <= 1 or not task.current:
            return settings
        return dataclasses.replace(settings, temperature=max(
            settings.temperature or 0.0, SAMPLE_TEMPERATURE), seed=task.round, prompt_cache=None)

    async def check_output(self, ctx: ToolContext, output: Any) -> Any:
        """Writes, imports, tests and runs the answer, then does what :func:`decide` says
        (a journaled step writing whole recorded files: a re-run writes the same bytes)."""
        task = module_task(ctx.task_input)
        path = task.path
        theirs = self._theirs(task)
        code = _tidy(str(output.files[path]), task, theirs)
        earlier = [r.data for r in ctx.rejections
                   if isinstance(r.data, dict) and "score" in r.data]
        problem = code_problem(path, code, tests=False)
        kept = usable_prefix(code) if problem else None
        if kept is not None and not code_problem(path, kept := _tidy(kept, task, theirs),
                                                 tests=False):
            code, problem = kept, ""  # the module before a tail that does not parse
        again = not problem and any(d["files"].get(path) == code for d in earlier)
        last = ctx.rejections[-1] if ctx.rejections else None
        # a fix asked in view of an unusable answer, unusable too (seen: a 1.5B sent the
        # same broken text back): a new sample is the better request
        fix_failed = bool(problem and last and not last.fresh and isinstance(
            last.data, dict) and "score" not in last.data)
        if problem or again:  # not a module at all, or one tried: nothing new to keep
            if earlier and (len(ctx.rejections) >= type(self).keep_best_after
                            or self.out_of_time(task.until)):
                return await self._finish(task, earlier, best(
                    [Tried.of(d) for d in earlier]), "keep_best")
            if not earlier and self.out_of_time() and len(ctx.rejections) >= self.last_tries:
                # past the run's budget with no usable answer: the run ends on time
                return CodeAnswer(files={}, text=f"no usable {path} before the run's time "
                                  f"budget ended: {problem}", out_of_time=True, report={
                                      "passed": False, "output": problem})
            if again or fix_failed:  # its tests would run as they ran: a new sample
                why = ("was the same as an earlier version" if again else
                       f"was not usable: {problem}")
                raise ModelRetry(f"Write {path} again from the start, as a new version: the "
                                 f"last one {why}. Reply with the complete file in one fenced "
                                 f"block labelled {path}.", fresh=True,
                                 data={"files": {path: code}, "why": why})
            raise ModelRetry(f"Your module is not usable yet: {problem}. Reply with the "
                             f"complete corrected file in one fenced block labelled {path}.",
                             data={"files": {path: code}})
        first = earlier[0]["files"][path] if earlier else code  # the smoke run's calls
        mine = {**await self._try(task, code, output.text, first), "raw": str(output.files[path])}
        tried = [*earlier, mine]
        ranked = [Tried.of(d) for d in tried]
        step, chosen = decide(ranked, rounds=type(self).test_rounds,
                              out_of_time=self.out_of_time(task.until))
        if not (step == "accept" and ranked[chosen].every_test):
            made = await self._composite(task, tried, first)  # the best parts of the answers
            if made is not None:
                extra = Tried.of(made)
                if best(ranked, [extra]) == len(tried) and (
                        step in ("accept", "keep_best") or passes(extra)):
                    return await self._finish(task, [*tried, made], len(tried), "accept" if
                                              passes(extra) else "keep_best")
                await self.workspace.write_file(path, code)  # the answer sent back, on disk
        if step in ("accept", "keep_best"):
            return await self._finish(task, tried, chosen, step)
        if step == "sample":  # told what the last one did, the spec's failed examples first
            why = how_it_did(mine)
            raise ModelRetry(
                f"Write {path} again from the start, as a new version: an earlier version "
                f"{why}.\n\n{spec_failures(mine['report'], task)}Reply with the complete file "
                f"in one fenced block labelled {path}.", fresh=True, data={**mine, "why": why})
        raise ModelRetry(revision(mine, task), data=mine)

    async def _try(self, task: ModuleTask, code: str, text: str, first: str
                   ) -> dict[str, Any]:
        """The candidate as journaled: the answer written, imported, its tests and their
        calls run (with no test that calls it, a smoke run made from ``first``)."""
        path, test_path = task.path, task.test_path
        await self.workspace.write_file(path, code)
        tests = ""
        with contextlib.suppress(WorkspaceError):  # no test file: the tester wrote none
            tests = await self.workspace.read_file(test_path)
        planned = [n for n in import_names(task.module.public_api) if n.isidentifier()]
        imported = await check_import(self.workspace.root, path, planned)
        failed = imported.error
        names = [*_public(task), *_defined(code)]
        exercised = mentions(tests, names)
        vouched = trusted(tests) if exercised else set()
        preamble, calls = calls_in_tests(tests, names) if exercised else ("", [])
        if not calls:  # nothing calls it: it is run all the same
            preamble, calls = f"from {dotted(path)} import *", smoke_calls(first, task.spec)
        if exercised and not failed:
            report = summary(await self.tests(test_path))
        else:  # it does not import, or "0 of 0 tests pass", which is no pass: calls decide
            report = {"passed": False if failed else None, "tests_passed": 0, "tests_failed": 0,
                      "tests_errors": 0, "timed_out": False, "output": failed or "no test "
                      f"calls this module; it was run on {len(calls)} calls of its public "
                      "functions instead"}
        runs = {} if failed else await run_calls(self.workspace.root, path, preamble, calls)
        data = {"score": score(report, vouched), "imports": not failed, "files": {path: code},
                "text": text, "report": report, "stubs": stubs(code), "runs": runs,
                # of the names the plan says it exports (its dependents import them)
                "exports": [len(imported.defines), len(planned)]}
        if _failures_known(data):
            data["failed"] = sorted(failed_tests(str(report.get("output", ""))))
        return data

    async def _composite(self, task: ModuleTask, tried: list[dict[str, Any]], first: str
                         ) -> dict[str, Any] | None:
        """The answers' composite (:mod:`agents.compose`) tested; None: no new one imports."""
        path = task.path
        usable = [d for d in tried if _failures_known(d)]
        if len(usable) < 2:
            return None
        tests = await self.workspace.read_file(task.test_path)
        code = compose([Answer(d["files"][path], frozenset(failed_tests(
            str(d["report"].get("output", ""))))) for d in usable],
            best([Tried.of(d) for d in usable]), tests, _public(task), [trusted(tests)])
        if code is None or any(d["files"].get(path) == code for d in tried):
            return None
        made = await self._try(task, code, "", first)
        return made if made["imports"] else None

    async def _finish(self, task: ModuleTask, tried: list[dict[str, Any]],
                      chosen: int, step: str) -> CodeAnswer:
        """The answer chosen (or the round before's, when nothing here beats it), written."""
        path, test_path = task.path, task.test_path
        pick = tried[chosen]
        before = _previous_round(task)
        if step == "keep_best" and before:
            pool = [Tried.of(before), *(Tried.of(d) for d in tried)]
            pick = [before, *tried][best(pool)]
        await self.workspace.write_file(path, pick["files"][path])  # a composite may be there
        if pick.get("raw", pick["files"][path]) != pick["files"][path]:  # see :meth:`_written`
            await self.workspace.write_file(_AS_WRITTEN + path, json.dumps(
                {"file": pick["files"][path], "raw": pick["raw"]}))
        tests = ""
        with contextlib.suppress(WorkspaceError):  # no test file: the tester wrote none
            tests = await self.workspace.read_file(test_path)
        chose = Tried.of(pick)
        fields = dict(
            files=pick["files"], text=pick["text"], report=pick["report"], tests=tests,
            out_of_time=self.out_of_time(task.until),
            # accepted by tests that ran (two candidates alike, with no test, is not that)
            accepted=step == "accept" and chose.tests[1] > 0,
            agreed=step == "accept" and chose.tests[1] == 0,
            vouched=[chose.trusted[0], chose.trusted[1]],
            history=[{"score": d["score"], "failed": first_failure(d["report"])}
                     for d in (tried[:-1] if step == "accept" else tried)])
        return CodeAnswer(**fields)


def _defined(code: str) -> list[str]:
    """The public module-level functions and classes ``code`` defines."""
    tree = parsed(code)
    return [n.name for n in (tree.body if tree else []) if isinstance(n, DEFINITIONS)
            and not n.name.startswith("_")]


def _tidy(text: str, task: ModuleTask, theirs: dict[str, str]) -> str:
    """The module an answer holds as its users will import it: without the tests a model
    wrote into it, with the imports it forgot (pure: a replay tidies alike)."""
    path = task.path
    api = {part for sig in task.module.public_api for part in api_name(sig).split(".")}
    return absolute_imports(add_missing_imports(without_tests(text, path, api), theirs),
                            path, [*task.before, *(u.path for u in task.uses)])


def _public(task: ModuleTask) -> list[str]:
    """The module-level names of the module's public API (a class for its methods)."""
    return [api_name(sig).split(".")[0] for sig in task.module.public_api]


def _failures_known(data: dict[str, Any]) -> bool:
    """It imports and its report names every test it failed (its functions can be scored)."""
    report = data.get("report") or {}
    run = data.get("score") or [0, 0]  # [passed, run]: the others failed or erred
    return bool(data.get("imports", True)) and run[1] > 0 and "files" in data and len(
        failed_tests(str(report.get("output", "")))) == run[1] - run[0]


def _previous_round(task: ModuleTask) -> dict[str, Any] | None:
    """The module a review sent back, as a candidate a worse revision must not replace."""
    report = task.report
    if not task.current or not report or "tests_passed" not in report:
        return None
    vouched = trusted(task.tests)
    return {"score": score(report, vouched), "files": {task.path: task.current}, "text": "",
            "report": report, "imports": True}


def _project(task: ModuleTask) -> dict[str, str]:
    """The public names of the modules it builds on: name -> the module to import it from."""
    out: dict[str, str] = {}
    for used in task.uses:
        for sig in used.public_api:
            out.setdefault(api_name(sig), dotted(used.path))
    return {name: mod for name, mod in out.items() if name.isidentifier()}
