"""What Ctrl-C says, per command: the one run to resume, or how many runs a worker
stopped and who continues them. A driving command records what it has under way in an
explicit ``Interrupt`` (not on argparse's namespace), which the message reads."""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

from orchestra import SQLiteBlackboard
from orchestra.cli.dispatch import dispatch
from orchestra.cli.interrupts import Interrupt, interrupted
from orchestra.cli.main import build_parser


def _args(command: str, **extra: object) -> argparse.Namespace:
    return argparse.Namespace(command=command, db="o.db", **extra)


def test_one_run_names_its_resume() -> None:
    assert interrupted(_args("run"), Interrupt(run_id="abc")) == (
        "\ninterrupted; the run stopped cleanly. Resume with: orchestra resume abc --db o.db")
    assert interrupted(_args("worker", run="abc"), Interrupt()).endswith(
        "orchestra resume abc --db o.db")
    assert interrupted(_args("run"), Interrupt()) == "\ninterrupted; the run stopped cleanly."


def test_a_worker_counts_its_runs_and_names_who_continues_them() -> None:
    def worker(serving: dict[str, int]) -> str:
        return interrupted(_args("worker", run=None), Interrupt(serving=serving))

    two = worker({"a": 1, "b": 2})
    assert two.startswith("\ninterrupted; the worker stopped 2 runs cleanly: another "
                          "`orchestra worker --db o.db`")
    one = worker({"a": 1})
    assert "stopped 1 run cleanly" in one and one.endswith("continues it.")
    assert two.endswith("continues them.")
    assert worker({}) == "\ninterrupted; the worker was serving no run."
    assert "the server stopped its runs cleanly" in interrupted(_args("serve"), Interrupt())


def test_a_run_records_its_id_in_the_interrupt_state(tmp_path: Path) -> None:
    db = tmp_path / "o.db"
    payload = json.dumps({"until": 0, "latency": [0, 0]})
    args = build_parser().parse_args(["run", "--db", str(db), "--json", "--pipeline",
                                      "benchmarks.scale_pipeline:build", "--input", payload])
    args.json = True
    state = Interrupt()
    assert state.run_id is None and state.serving is None
    assert asyncio.run(dispatch(args, state)) == 0

    async def only_run() -> str:
        async with await SQLiteBlackboard.open(db) as store:
            (run,) = await store.list_runs()
            return run.id

    assert state.run_id == asyncio.run(only_run())
    assert not hasattr(args, "_run_id")  # nothing hidden on the namespace
