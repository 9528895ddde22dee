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
