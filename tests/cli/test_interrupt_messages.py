"""What Ctrl-C says, per command: the one run to resume, or how many runs a worker
stopped and who continues them."""

from __future__ import annotations

import argparse

from orchestra.cli.interrupts import interrupted


def _args(command: str, **extra: object) -> argparse.Namespace:
    return argparse.Namespace(command=command, db="o.db", **extra)


def test_one_run_names_its_resume() -> None:
    assert interrupted(_args("run", _run_id="abc")) == (
        "\ninterrupted; the run stopped cleanly. Resume with: orchestra resume abc --db o.db")
    assert interrupted(_args("worker", run="abc")).endswith("orchestra resume abc --db o.db")


def test_a_worker_counts_its_runs_and_names_who_continues_them() -> None:
    two = interrupted(_args("worker", run=None, _serving={"a": 1, "b": 2}))
    assert two.startswith("\ninterrupted; the worker stopped 2 runs cleanly: another "
                          "`orchestra worker --db o.db`")
    one = interrupted(_args("worker", run=None, _serving={"a": 1}))
    assert "stopped 1 run cleanly" in one and one.endswith("continues it.")
    assert two.endswith("continues them.")
    assert interrupted(_args("worker", run=None, _serving={})) == (
        "\ninterrupted; the worker was serving no run.")
    assert "the server stopped its runs cleanly" in interrupted(_args("serve"))
