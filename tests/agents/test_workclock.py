"""The run's working time counts the time processes spent on it, not the wall clock."""

from __future__ import annotations

from pathlib import Path

from agents.workclock import WorkClock


def test_time_no_process_spent_on_the_run_is_not_counted() -> None:
    now = [1000.0]
    first = WorkClock(lambda: now[0])
    assert first.worked() == 0.0
    now[0] += 120  # the first process works two minutes, stamps a task, then is killed
    stamp = first.worked()
    assert stamp == 120.0
    now[0] += 12 * 3600  # resumed the next morning, by a process whose clock starts anew
    second = WorkClock(lambda: now[0] * 2)  # its own monotonic origin and pace
    second.seen(stamp)
    assert second.worked() == 120.0
    second.seen(60.0)  # an older stamp does not turn it back
    assert second.worked() == 120.0


def test_a_coders_first_request_reads_the_runs_working_time(tmp_path: Path) -> None:
    """A process resumed at a coder task (no tester task before it in this process) starts
    its clock from the task's stamp, as every role's task does; the request itself is the
    one-shot request, byte for byte."""
    from agents.coder import Coder
    from agents.coderasks import module_request
    from agents.workspace import Workspace

    now = [5.0]
    coder = Coder(Workspace(tmp_path), clock=WorkClock(lambda: now[0]))
    task = {"module": {"path": "m.py", "test_path": "test_m.py", "purpose": "",
                       "public_api": []}, "spec": "# m\n", "stated": {"section": ""},
            "worked": 300.0}
    assert coder.task_message(task) == module_request("# m\n", "m.py", {})
    assert coder.clock.worked() == 300.0


def test_a_round_that_cannot_end_in_time_is_not_begun() -> None:
    """What is left must hold another stretch as long as the module's last round; no end
    is no limit, and no start known is the plain "past the end" test."""
    clock = WorkClock(lambda: 0.0)
    clock.seen(300.0)
    assert clock.fits(100.0, 450.0) is False  # 300 + 200 > 450
    assert clock.fits(200.0, 450.0) is True  # 300 + 100 < 450
    assert clock.fits(200.0, 450.0, 390.0) is False  # the earliest end counts
    assert clock.fits(0.0, None) is True
    assert clock.fits(None, 450.0) is True and clock.fits(None, 300.0) is False
    assert clock.past(300.0) and not clock.past(450.0, None) and not clock.past(None)


def test_asking_with_no_end_does_not_start_the_clock() -> None:
    """A role with no budget asks whether it is out of time; that is no stamp: the run's
    working time still starts where its first task's stamp (or reading) says."""
    now = [0.0]
    clock = WorkClock(lambda: now[0])
    assert not clock.past(None, None) and clock.fits(None)
    now[0] = 50.0
    assert clock.worked() == 0.0


def test_no_review_and_no_second_round_without_the_time_for_one() -> None:
    """Seen with the 1.5B on a slow host: a review posted 47 s before the module's end
    (150 s, then out of time), and a corrected test file 45 s before it (246 s, then
    thrown away). A round goes on only where another as long still fits."""
    from types import SimpleNamespace

    from agents.inputs import ModuleTask, Stated
    from agents.pipeline import _code_route, _review_route
    from agents.roles import CodeAnswer, ModuleSpec, Review
    from orchestra.store import Writes

    module = ModuleSpec(path="m.py", purpose="", test_path="test_m.py", public_api=["f()"])
    failing = {"passed": False, "tests_passed": 1, "tests_failed": 2, "tests_errors": 0,
               "output": "FAILED test_m.py::test_a - x\nFAILED test_m.py::test_b - y"}
    clock = WorkClock(lambda: 0.0)
    clock.seen(400.0)  # the run's working seconds when each task below ends

    def code(worked: float) -> Writes:
        done = ModuleTask(module=module, spec="# m\n", stated=Stated(section=""),
                          until=450.0, worked=worked)
        writes = Writes()
        _code_route("failures", clock)(CodeAnswer(  # type: ignore[arg-type]
            files={"m.py": "def f():\n    return 1\n"}, report=failing, vouched=[0, 1]),
            SimpleNamespace(input=done.model_dump(mode="json")), writes)
        return writes

    late = code(100.0)  # the coder's round took 300 s; 50 s are left
    assert not late.handoffs
    assert [e for e, _ in late.events] == ["module.failed"]
    early = code(380.0)  # it took 20 s: a review and another round fit
    assert [h.to_role for h in early.handoffs] == ["reviewer"]
    assert early.handoffs[0].payload["began"] == 380.0

    def review(began: float | None) -> Writes:
        done = ModuleTask(module=module, spec="# m\n", stated=Stated(section=""),
                          until=450.0, worked=390.0, began=began, report=failing)
        writes = Writes()
        _review_route(3, None, clock)(Review(  # type: ignore[arg-type]
            module="m.py", approved=False, fix="code", comments=["wrong"]),
            SimpleNamespace(input=done.model_dump(mode="json")), writes)
        return writes

    assert not review(200.0).handoffs  # a round since 200 s: none fits before 450
    assert [h.to_role for h in review(380.0).handoffs] == ["coder"]
    assert [h.to_role for h in review(None).handoffs] == ["coder"]  # a task from before
