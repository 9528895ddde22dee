"""The scale test (benchmarks/scale.py) at a tiny size: 20 runs, 2 worker processes,
one of them SIGKILLed and the PostgreSQL server restarted mid-pass. Every run must
finish, the workers must survive the restart (exit 0), and the tasks worked on twice
(read from the journal) must be among those the killed worker held. Nothing is timed."""

from __future__ import annotations

import pytest

from benchmarks import scale
from benchmarks.postgres.local import LocalPostgres


@pytest.mark.slow
def test_a_kill_and_a_restart_finish_every_run_and_rerun_only_what_was_in_flight(
        server: LocalPostgres) -> None:
    args = scale.parse_args(["--runs", "20", "--workers", "2", "--duration", "10",
                             "--latency", "0.2,0.5", "--lease", "3", "--drain", "60"])
    got = scale.one_pass(server, 2, args)  # restarts the shared server: it comes back
    assert got["runs_completed"] == got["runs"] == 20, got["runs_by_status"]
    assert got["worker_exit_codes"] == [0, 0]  # the survivor and the replacement
    assert got["in_flight_at_kill"] > 0  # the kill hit work in flight (each run has a task)
    assert got["in_flight_at_kill"] == got["held_at_kill"]
    # every task the killed worker held was taken over; none other was worked on twice (a
    # claim whose reply the restart cut off is claimed again after its lease, but its
    # steps never started twice), and no side effect ran twice outside those
    assert got["in_flight_taken_over"], got
    assert got["rerun_not_in_flight"] == 0, got
    assert got["effects_run_twice"] <= got["in_flight_at_kill"]
    assert got["runs_with_seq_gaps"] == 0
