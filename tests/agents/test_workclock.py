"""The run's working time counts the time processes spent on it, not the wall clock."""

from __future__ import annotations

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
