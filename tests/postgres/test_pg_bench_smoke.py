"""Smoke test of the PostgreSQL benchmarks (benchmarks/postgres/) at tiny sizes:
every side runs the workload to its checked end state; nothing is timed or asserted fast."""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path

import pytest

from benchmarks.postgres import compare as bench
from benchmarks.postgres import drivers as pg_drivers
from benchmarks.postgres import workers as pg_workers
from benchmarks.postgres.local import LocalPostgres


def _installed(module: str) -> bool:
    """find_spec of a dotted name raises when a parent package is missing."""
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


@pytest.mark.parametrize("side", bench.SIDES)
def test_each_side_runs_s1_and_s2(side: str, server: LocalPostgres, tmp_path: Path) -> None:
    if side.startswith("langgraph") and not _installed("langgraph.checkpoint.postgres"):
        pytest.skip("langgraph-checkpoint-postgres is not installed (pip install -e '.[bench]')")
    s1 = asyncio.run(bench._on(side, server, tmp_path, 1, concurrent=False))
    assert s1["steps"] == 17 and s1["ms_per_step"] > 0
    s2 = asyncio.run(bench._on(side, server, tmp_path, 2, concurrent=True))
    assert s2["pipelines"] == 2 and s2["makespan_over_ideal"] >= 1


def test_both_drivers_run_the_write_loop(server: LocalPostgres) -> None:
    if not _installed("psycopg"):
        pytest.skip("psycopg is not installed (pip install -e '.[bench]')")
    result = pg_drivers.measure(server, steps=10, reps=1)
    assert set(result) == {"asyncpg", "psycopg"} and all(v > 0 for v in result.values())


@pytest.mark.slow
def test_s5_worker_processes_finish_every_task(server: LocalPostgres) -> None:
    assert pg_workers.one_pass(server, workers=2, runs=1, tasks=6).from_first > 0


def test_unknown_sides_are_refused() -> None:
    with pytest.raises(SystemExit, match="unknown sides"):
        bench.main(["--sides", "sqlite,nope"])


def test_s5_latency_bound_mode_runs(server: LocalPostgres) -> None:
    """Each task waits on its model (``benchmarks.fanout``'s ``model_latency``)."""
    assert pg_workers.one_pass(server, workers=1, runs=1, tasks=4, mode="latency").all_up > 0


def test_a_look_is_timed_on_every_shape(server: LocalPostgres) -> None:
    """benchmarks.looks on PostgreSQL at a hundredth of its sizes: both queries answer."""
    from benchmarks import looks

    out = asyncio.run(looks.main_async(["postgres"], 2, 0.01))
    assert len(out) == len(looks.SHAPES)
    assert all(f["now_ms"] > 0 and f["grouped_ms"] > 0 for f in out.values())
