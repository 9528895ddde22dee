"""Smoke test of the benchmark harness (benchmarks/run.py) at tiny sizes."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]


def _run_module(module: str, *args: str) -> tuple[subprocess.CompletedProcess[str], Any]:
    """Run a benchmark module to its end; its process and its last line (JSON)."""
    proc = subprocess.run([sys.executable, "-m", module, *args], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc, json.loads(proc.stdout.splitlines()[-1])


def _run_harness(out: Path, *args: str) -> list[dict[str, Any]]:
    cmd = [sys.executable, "-m", "benchmarks.run", "--quick", "--reps", "1", "--out", str(out)]
    proc = subprocess.run(
        [*cmd, "--workdir", str(out / "work"), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (out / "results.md").read_text().startswith("# Benchmark results")
    lines = (out / "results.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


@pytest.mark.slow
def test_langgraph_side_quick(tmp_path: Path) -> None:
    if importlib.util.find_spec("langgraph") is None:
        pytest.skip("langgraph is not installed (pip install -e '.[bench]')")
    pytest.importorskip("langgraph.checkpoint.sqlite.aio")
    records = _run_harness(
        tmp_path,
        *("--sides", "langgraph", "--pipelines", "5", "--turns", "60"),
        *("--durabilities", "sync", "--kill-points", "next"),
    )
    by_scenario = {r["scenario"]: r for r in records}
    assert set(by_scenario) == {"S1", "S2", "S3", "S4"}
    assert all(r["side"] == "langgraph" and r["durability"] == "sync" for r in records)
    assert by_scenario["S1"]["steps"] == 5 * 17
    assert by_scenario["S1"]["journal_mode"] == "WAL"
    assert by_scenario["S3"]["turns"] == 60
    s4 = by_scenario["S4"]
    assert isinstance(s4["duplicates"], int) and s4["duplicates"] >= 0
    assert s4["calls_killed_process"] == 9


def test_floor_side_quick(tmp_path: Path) -> None:
    records = _run_harness(tmp_path, "--sides", "floor", "--scenarios", "S1,S2")
    assert [(r["scenario"], r["durability"]) for r in records] == [("S1", "none"), ("S2", "none")]
    assert records[1]["makespan_s"] >= 17 * 0.05


@pytest.mark.slow
def test_orchestra_side_quick(tmp_path: Path) -> None:
    """The orchestra side runs every scenario and checks the workload's final state."""
    records = _run_harness(
        tmp_path,
        *("--sides", "orchestra", "--pipelines", "5", "--turns", "60"),
        *("--durabilities", "default", "--kill-points", "next"),
    )
    by_scenario = {r["scenario"]: r for r in records}
    assert set(by_scenario) == {"S1", "S2", "S3", "S4"}
    assert by_scenario["S1"]["steps"] == 5 * 17
    assert by_scenario["S1"]["synchronous"] == "NORMAL"
    assert by_scenario["S3"]["turns"] == 60
    assert by_scenario["S4"]["duplicates"] == 0  # killed on entering call 10: none repeated
    assert by_scenario["S4"]["calls_killed_process"] == 9


def test_store_floor_replays_what_the_store_wrote(tmp_path: Path) -> None:
    """The store-floor tool replays the recorded transactions faithfully (it checks the
    replayed files' row counts against the recorded one) and reports all four ways."""
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.profiling.store_floor", "--pipelines", "2",
         "--reps", "1"],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    for label in ("today", "today, grouped", "one record", "record + grouped"):
        assert f"{label}  " in proc.stdout


def test_profile_threads_splits_each_threads_cpu(tmp_path: Path) -> None:
    """The thread profile runs both scenarios and its figures hold together: the writer's
    statements are timed on its own CPU clock (so they never exceed its CPU), and the GIL
    floor is the event loop's CPU."""
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.profiling.profile_threads", "--pipelines", "3",
         "--reps", "1"],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    for scenario in ("S1", "S2"):
        block = proc.stdout.split(f"{scenario}: ")[1]
        figures = {line[:26].strip(): float(line[26:].split()[0])
                   for line in block.splitlines()[1:] if line.startswith("  ")
                   and not line.startswith("  makespan")}
        assert figures["writer CPU"] > 0 and figures["loop CPU"] > 0, block
        assert 0 < figures["writer in statements"] <= figures["writer CPU"] + 0.001, block
        assert -0.001 <= figures["writer outside batches"] <= figures["writer CPU"], block
        assert figures["readers CPU"] >= 0, block
        assert figures["GIL floor"] == figures["loop CPU"], block
    assert "the GIL floor alone is" in proc.stdout


def test_s2_workers_quick() -> None:
    """S2 served by worker processes: every run completes with the workload's final state
    (the module checks it and exits non-zero otherwise), each pass reports its ratio."""
    proc, out = _run_module("benchmarks.s2_workers", "--pipelines", "4", "--reps", "1",
                            "--workers", "1,2")
    assert out["pipelines"] == 4
    for label in ("in-loop", "1_worker", "2_workers"):
        assert out[label]["makespan_over_ideal"]["median"] >= 1.0, out
    assert "extra claims 0" in proc.stdout


def test_looks_quick() -> None:
    """A look's cost per store shape: both queries timed on SQLite (PostgreSQL's in
    tests/postgres), every shape reported."""
    _, out = _run_module("benchmarks.looks", "--stores", "sqlite", "--reps", "2",
                         "--scale", "0.01")
    assert len(out) == 4 and all(f["now_ms"] > 0 and f["grouped_ms"] > 0 for f in out.values())


@pytest.mark.slow
def test_token_latency_on_its_loopback_server() -> None:
    """The token-latency benchmark end to end (``orchestra serve``, an SSE client and an
    ``events --follow`` process) on its fake model server: every call's first token is
    matched to its task and seen by both readers, and the delta writes are counted."""
    _, out = _run_module("benchmarks.token_latency", "--fake", "--calls", "3",
                         "--tokens-per-s", "100")
    assert out["calls"] == 3, out
    for reader in ("first_token_to_sse", "first_token_to_follow"):
        assert (out[reader]["n"], out[reader]["left_out"]) == (3, 0), out
    assert out["delta_events"] >= 3 and out["delta_writes_per_s_per_streaming_call"] > 0
    assert out["delta_writes_per_s_all_calls"] > 0
