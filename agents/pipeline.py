"""The software pipeline: the architect plans; per module the tester writes tests from
the spec, the coder chooses among its answers on running code (:mod:`agents.decide`), and
the reviewer, where tests the spec vouches for fail, sends the fix to the tester or the
coder, up to ``max_rounds`` rounds. Routes turn each role's output into the next work,
atomically with the task's completion; each module ends approved, kept or failed.

Run input: ``{"spec": str, "workspace": str, "max_rounds": int, "review": "failures" |
"always", "time_budget": seconds|None, "module_budget": seconds|None, "model": spec|None}``.
The budget is the run's working time (:mod:`agents.workclock`), so a resumed run goes on
where it was; given only ``module_budget`` (the CLI's default) it is that much per planned
module, so a project of seven modules is not held to one module's ten minutes.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agents.entries import AddedRole, added_roles, module_reviewed, module_written, tests_written
from agents.inputs import ModuleTask, PlanTask, module_task
from agents.roles import Architect, CodeAnswer, ProjectPlan, Review, TestsAnswer
from agents.speccases import CASE_PREFIX
from agents.specfacts import SpecFacts, read_spec
from agents.summary import run_story
from agents.team import Coder, Reviewer, Tester
from agents.testsplit import failed_tests
from agents.workclock import WorkClock
from agents.workspace import Workspace
from orchestra import NewHandoff, NewNote, NewTask, Pipeline, Task, UserError, fan_out
from orchestra.coordinator.pipeline_options import declare_options
from orchestra.store import Writes

PIPELINE_REF = "agents.pipeline:build_pipeline"
DEFAULT_MAX_ROUNDS = 2
VERSION = "16"
"""The stock pipeline's ``version=``: raised when what its tasks do changes where the
fingerprint cannot see it, so a run in flight stays with the code that wrote its journal
(``docs/versions.md``)."""
MODULE_BUDGET_S = 600.0
"""Working seconds per planned module when no run budget is given (``module_budget``)."""
RESERVE_S = 150.0
"""Working seconds before the end of the run's budget at which no module starts another
round: what the rounds in flight and the modules not yet begun need to end within it."""
REVIEWS = ("failures", "always")
"""When the reviewer reads a module: only when its tests do not all pass (the default: a
small model's review of a passing module is a model call of mostly noise), or always."""


def _uses(plan: ProjectPlan, facts: SpecFacts) -> dict[str, list[str]]:
    """For each module, the plan's other modules it builds on: those its part of the spec
    names, and, where no part names another, those the architect listed (a guess)."""
    paths = [m.path for m in plan.modules]
    named = facts.uses(paths)
    said = any(named.values())
    return {m.path: [p for p in paths if p != m.path and (
        (p in m.uses and not said) or p in named[m.path])] for m in plan.modules}


def _ordered(paths: list[str], uses: dict[str, list[str]]) -> list[str]:
    """``paths`` with every module after the ones it builds on (else, or in a cycle, as is)."""
    done: list[str] = []

    def visit(p: str, stack: tuple[str, ...]) -> None:
        if p in done or p in stack:
            return
        for q in uses.get(p, []):
            visit(q, (*stack, p))
        done.append(p)

    for p in paths:
        visit(p, ())
    return done


def _ends(budget: float | None, per_module: float | None, now: float,
          modules: int) -> list[float | None]:
    """When each module's rounds end, in build order: by its share of the budget left (the
    first cannot spend what the others need), or by the budget per module."""
    if budget is not None:
        share = (budget - now) / modules
        return [now + share * (i + 1) for i in range(modules)]
    if per_module is not None:
        return [now + per_module * (i + 1) - RESERVE_S for i in range(modules)]
    return [None] * modules


def _plan_route(budget: float | None, per_module: float | None, clock: WorkClock) -> Any:
    def route(plan: ProjectPlan, task: Task, writes: Writes) -> None:
        facts = read_spec(PlanTask.model_validate(task.input).spec)  # once per run
        writes.plans.append(plan.model_dump(mode="json"))
        for d in plan.decisions:
            writes.notes.append(NewNote(f"{d.decision} — because {d.reason}", ("decision",)))
        by_path = {m.path: m for m in plan.modules}
        for path, module in by_path.items():  # the spec's own signatures, where it gives them
            api = facts.signatures(path, [p for p in by_path if p != path])
            by_path[path] = module.model_copy(update={"public_api": api or module.public_api})
        uses = _uses(plan, facts)
        order = [p for p in _ordered(list(by_path), uses) if p not in plan.kept]
        for path in plan.kept:  # finished before this run: its ModuleWritten says so
            writes.notes.append(NewNote(f"{path} is kept as the workspace holds it: its "
                                        "tests pass", ("kept", path)))
            writes.entries.append(module_written(path, 0, by="tests", reason="kept as the "
                                                 "workspace holds it: its tests pass"))
        if not order:
            return
        now = clock.worked()  # a route runs once: no replay
        ends = _ends(budget, per_module, now, len(order))
        fan_out(
            writes, "tester",
            (ModuleTask(module=by_path[path].model_copy(update={"uses": uses[path]}),
                        round=1, spec=facts.text, uses=[by_path[p] for p in uses[path]],
                        before=[p for p in by_path if p in plan.kept or p in order[:i]],
                        stated=facts.stated(path, by_path[path].public_api),
                        until=ends[i],
                        worked=now).model_dump(mode="json")
             for i, path in enumerate(order)),
            note="write this module's tests from the spec",
            key=lambda item: f"tests:{item['module']['path']}:1")

    return route


def _tests_route(budget: float | None, clock: WorkClock) -> Any:
    def route(result: TestsAnswer, task: Task, writes: Writes) -> None:
        done = _seen(clock, task)
        writes.entries.append(tests_written(done, result.cut_off))
        if done.round > 1 and clock.past(budget, done.until):
            # corrected tests past the budget: the module keeps the code it has
            _failed(writes, done.path, done.round - 1, "the run's time budget is spent; its "
                    "tests were corrected but its code was not tried again")
            return
        _to_coder(done, writes, clock.worked())

    return route


def _seen(clock: WorkClock, task: Task) -> ModuleTask:
    """The finished task's input, its stamp of the run's working time read."""
    done = module_task(task.input)
    clock.seen(done.worked)
    return done


def _to_coder(done: ModuleTask, writes: Writes, worked: float) -> None:
    payload = ModuleTask(module=done.module, spec=done.spec, stated=done.stated,
                         uses=done.uses, before=done.before, round=done.round, until=done.until,
                         worked=worked)
    if done.round > 1:  # the tests were wrong: the code is tried again against the new ones
        payload.current = done.code
        payload.comments = ["The tests were corrected (the reviewer found them wrong "
                            "against the spec); make sure the module passes them."]
    writes.handoffs.append(NewHandoff("coder", payload.model_dump(mode="json"),
                                      note="implement this module",
                                      key=f"code:{done.path}:{done.round}"))


def _code_route(review: str, clock: WorkClock) -> Any:
    def route(result: CodeAnswer, task: Task, writes: Writes) -> None:
        done = _seen(clock, task)
        path, rnd = done.path, done.round
        every = bool((result.report or {}).get("passed"))
        passed = every or result.accepted
        if review == "failures" and (passed or result.agreed):
            by = ("its tests (every one passes; reviews are for failures)" if every else
                  "the tests the spec vouches for (every one passes; the others are the "
                  f"tester's own guesses: {_tally(result.report)})" if passed else
                  "agreement: no test calls it, and two of its answers gave the same "
                  "results on the same calls")
            writes.notes.append(NewNote(f"approved {path} in round {rnd}, by {by}",
                                        ("approval", path)))
            writes.events.append(("module.approved", {"module": path, "round": rnd,
                                                      "by": "tests" if passed else "agreement"}))
            writes.entries.append(module_written(path, rnd, by="tests" if passed else "agreement",
                                                 report=result.report))
        elif result.out_of_time and not result.files:
            _failed(writes, path, rnd, f"the run's time budget is spent: {result.text}")
        elif review == "failures" and result.vouched[1:] and (
                result.vouched[0] == result.vouched[1]):
            # no test the spec vouches for fails: a review would judge the tester's guesses
            _kept(writes, path, rnd, result)
        elif not passed and (result.out_of_time or not clock.fits(done.worked, done.until)):
            # a review then has no round left to ask for: the module keeps its best code
            _failed(writes, path, rnd, ("the run's time budget is spent" if result.out_of_time
                                        else "no time is left for another round")
                    + f"; its best code is kept ({_tally(result.report)})")
        else:
            _to_review(result, done, writes, clock.worked())

    return route


def _tally(report: dict[str, Any]) -> str:
    failed = int(report.get("tests_failed") or 0) + int(report.get("tests_errors") or 0)
    ran = int(report.get("tests_passed") or 0) + failed
    return f"{ran - failed} tests passed, {failed} failed" if ran else "no test of it ran"


def _kept(writes: Writes, path: str, rnd: int, result: CodeAnswer) -> None:
    """Its best code kept unreviewed (only the tester's own tests fail, or none ran and no
    two answers agreed), or failed when no test of it could run."""
    report = result.report or {}
    if _tally(report) == "no test of it ran" and report.get("passed") is not None:
        _failed(writes, path, rnd, "no test of its best code could run: "
                + str(report.get("output", ""))[:300])
        return
    why = (f"the tester's own tests fail ({_tally(report)}), and they may be wrong; "
           + (f"every one of the {result.vouched[1]} tests the spec vouches for passes"
              if result.vouched[1] else "the spec vouches for none of them")
           if report.get("passed") is not None else
           "no test calls it, and no two of its answers agreed when run")
    writes.notes.append(NewNote(f"kept {path} in round {rnd} without a review: {why}",
                                ("kept", path)))
    writes.events.append(("module.kept", {"module": path, "round": rnd, "reason": why}))
    writes.entries.append(module_written(path, rnd, by="kept", report=report, reason=why))


def _failed(writes: Writes, path: str, rnd: int, reason: str) -> None:
    writes.notes.append(NewNote(f"{path} failed after {rnd} review rounds: {reason}",
                                ("failed", path)))
    writes.events.append(("module.failed", {"module": path, "rounds": rnd,
                                            "reason": reason[:500]}))
    writes.entries.append(module_written(path, rnd, by="failed", reason=reason))


def _to_review(result: CodeAnswer, done: ModuleTask, writes: Writes, worked: float) -> None:
    payload = ModuleTask(module=done.module, round=done.round, spec=done.spec,
                         stated=done.stated, uses=done.uses, until=done.until, worked=worked,
                         code=result.files.get(done.path, ""), tests=result.tests,
                         report=result.report, summary=result.text[:500],
                         history=result.history, began=done.worked)
    writes.handoffs.append(NewHandoff("reviewer", payload.model_dump(mode="json"),
                                      note=f"round {done.round}: please review",
                                      key=f"review:{done.path}:{done.round}"))


def _review_route(max_rounds: int, budget: float | None, clock: WorkClock) -> Any:
    def route(review: Review, task: Task, writes: Writes) -> None:
        done = _seen(clock, task)
        path, rnd = done.path, done.round
        writes.entries.append(module_reviewed(done, review))
        if review.approved:
            writes.notes.append(NewNote(f"approved {path} in round {rnd}", ("approval", path)))
            writes.events.append(("module.approved", {"module": path, "round": rnd}))
            writes.entries.append(module_written(path, rnd, by="review", report=done.report))
            return
        reason = "; ".join(review.comments) or "no reason given"
        if rnd >= max_rounds:
            _failed(writes, path, rnd, reason)
            return
        if not clock.fits(done.began, budget, done.until):  # a route runs once: no replay
            _failed(writes, path, rnd, f"no time is left for another round ({reason})")
            return
        base = ModuleTask(module=done.module, round=rnd + 1, spec=done.spec,
                          stated=done.stated, uses=done.uses, comments=review.comments,
                          report=done.report, until=done.until, worked=clock.worked())
        failing = failed_tests(str((done.report or {}).get("output", "")))
        if review.fix == "tests" and failing and all(t.startswith(CASE_PREFIX) for t in failing):
            # only the spec's own examples fail: no tester can change them; the code must
            writes.notes.append(NewNote(
                f"the review of {path} blamed the tests, but only the spec's own examples "
                "fail: the code goes back instead", ("review", path)))
            review = review.model_copy(update={"fix": "code"})
        if review.fix == "tests":
            payload = base.model_copy(update={"tests": done.tests, "code": done.code})
            writes.handoffs.append(NewHandoff(
                "tester", payload.model_dump(mode="json"),
                note=f"round {rnd}: the tests are wrong", key=f"tests:{path}:{rnd + 1}"))
        else:
            payload = base.model_copy(update={"current": done.code})
            writes.handoffs.append(NewHandoff(
                "coder", payload.model_dump(mode="json"),
                note=f"changes requested in round {rnd}", key=f"code:{path}:{rnd + 1}"))

    return route


@declare_options("agents.cli_options:OPTIONS")  # its command line (`orchestra run --spec`)
def build_pipeline(run_input: Any, *, extra_roles: Sequence[AddedRole] = (),
                   ref: str = PIPELINE_REF) -> Pipeline:
    """The pipeline for one run input (also how any process rebuilds it to resume).
    ``extra_roles``: roles added beside the stock four, acting on the entries the routes
    post (``agents.entries``); ``ref``: the factory that adds them (``agents.extend``)."""
    if not isinstance(run_input, dict) or "spec" not in run_input or "workspace" not in run_input:
        raise UserError("the software pipeline needs input {'spec': <text>, 'workspace': <dir>}")
    root = Path(run_input["workspace"])
    # every process that rebuilds the pipeline (resume, a worker) may find the directory
    # missing: a run recorded before its first task ran owes nothing to what is there
    root.mkdir(parents=True, exist_ok=True)
    workspace = Workspace(root)
    max_rounds = int(run_input.get("max_rounds") or DEFAULT_MAX_ROUNDS)
    budget = run_input.get("time_budget")
    per_module = run_input.get("module_budget")
    for name, value in (("time_budget", budget), ("module_budget", per_module)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                  or value < 0):
            raise UserError(f"{name} {value!r} is not a duration (seconds of the run's "
                            "working time, as `orchestra run --time-budget` sets it)")
    if budget is not None:
        budget = float(budget) - RESERVE_S
    clock = WorkClock()
    review = str(run_input.get("review") or REVIEWS[0])
    if review not in REVIEWS:
        raise UserError(f"review {review!r} is not one of {', '.join(REVIEWS)}: 'failures' "
                        "reviews a module only when its tests fail, 'always' after every "
                        "coder task")
    return Pipeline(
        "software",
        roles=[Architect(workspace, clock=clock), Tester(workspace, budget=budget, clock=clock),
               Coder(workspace, budget=budget, clock=clock), Reviewer(workspace, clock=clock),
               *added_roles(extra_roles, workspace, clock)],
        # the files there are now: the architect keeps a module whose tests pass
        start=lambda inp: [NewTask("architect", PlanTask(
            spec=inp["spec"], workspace_files=workspace.existing_files()).model_dump(),
            key="plan")],
        routes={
            "architect": _plan_route(budget, None if per_module is None else float(per_module),
                                     clock),
            "tester": _tests_route(budget, clock),
            "coder": _code_route(review, clock),
            "reviewer": _review_route(max_rounds, budget, clock),
        },
        ref=ref,
        version=VERSION,
        fail_run_on_task_failure=True,
        summary=run_story,
    )
