"""S2 served by N ``orchestra worker`` processes on one SQLite file (issue 25's target:
200 pipelines within 1.5x the ideal with 2 workers).

    python -m benchmarks.s2_workers [--workers 1,2] [--reps 3] [--pipelines 200]

Per pass: S2's pipelines (the workload's 17 calls, a fake model answering after 50 ms,
``benchmarks.sides.orchestra_side``'s pipeline, loaded by the workers by reference:
``benchmarks.s2_workers:build``) are created as pending runs in one fresh SQLite file;
then N workers start on it and serve until idle. The makespan is read from the store's
events (its clock): from the first ``task.claimed`` to the last ``run.completed``, over
the 0.85 s ideal. Every run must be completed with the workload's final state.

The reference is the one-process S2 as ``benchmarks.run`` measures it (one event loop,
``Coordinator.run`` per pipeline, after a warm-up), in the same invocation. Passes are
interleaved per repetition (odd reps in order, even reps reversed); medians of
``--reps`` with min-max. Beside the ratio, each pass reports what explains it: the
workers' start-up (spawn to their first claim), their CPU seconds, how the runs were
split between them, runs whose tasks moved between workers, how long after the first
run the last one started, and the peak rate (steps completed per 0.1 s, per second)
with the makespan all steps would take at it: the bound once both cores are saturated,
which no start-up order beats. One JSON line last.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
import statistics
import tempfile
import time
from collections import Counter
from contextlib import closing
from pathlib import Path
from typing import Any

from benchmarks import measure
from benchmarks.sides import orchestra_side
from benchmarks.sides.orchestra_side import FakeAdapter, check_run, pipeline
from benchmarks.workers import spawn
from benchmarks.workload import CALLS_PER_PIPELINE, FakeModel
from orchestra import Coordinator, Pipeline, SQLiteBlackboard

REF = "benchmarks.s2_workers:build"
IDEAL = CALLS_PER_PIPELINE * measure.S2_LATENCY
Pass = dict[str, Any]


def build(run_input: Any) -> Pipeline:
    """The workload's pipeline with its fake model (S2's latency unless the run input
    says ``{"latency": seconds}``), as a worker rebuilds it for each run."""
    inp = run_input if isinstance(run_input, dict) else {}
    latency = float(inp.get("latency", measure.S2_LATENCY))
    return pipeline(FakeAdapter(FakeModel(latency=latency)), ref=REF)


async def _create(db: Path, n: int) -> list[str]:
    async with await SQLiteBlackboard.open(db) as store:
        coord = Coordinator(store, build({}))
        return [(await coord.start({"i": i})).id for i in range(n)]


def _serve(db: Path, workers: int, timeout: float) -> tuple[float, dict[int, float]]:
    """Run the workers until each exits idle; when they were spawned (host clock, which
    is SQLite's store clock) and each one's CPU seconds, by pid."""
    spawned = time.time()
    procs = spawn(db, workers, None)
    cpu: dict[int, float] = {}
    deadline = time.monotonic() + timeout
    try:
        while len(cpu) < len(procs):
            if time.monotonic() > deadline:
                raise SystemExit(f"the workers did not finish within {timeout:g} s")
            pid, status, usage = os.wait4(-1, os.WNOHANG)
            if pid == 0:
                time.sleep(0.05)
                continue
            if pid not in {p.pid for p in procs}:
                continue
            if os.waitstatus_to_exitcode(status) != 0:
                raise SystemExit(f"worker {pid} exited with {os.waitstatus_to_exitcode(status)}")
            cpu[pid] = usage.ru_utime + usage.ru_stime
            next(p for p in procs if p.pid == pid).returncode = 0
    finally:
        for p in procs:
            if p.returncode is None:
                p.kill()
                p.wait()
    return spawned, cpu


def _pid(owner: str) -> int:
    return int(owner.split(":")[1])


def read_pass(db: Path, runs: list[str], spawned: float) -> Pass:
    """The makespan and its explanation, from the store's events."""
    with closing(sqlite3.connect(db)) as conn:
        claims = conn.execute("SELECT run_id, at, json_extract(data, '$.owner') FROM events "
                              "WHERE kind = 'task.claimed' ORDER BY at").fetchall()
        ends = conn.execute("SELECT run_id, at FROM events WHERE kind = 'run.completed'"
                            ).fetchall()
        steps = [at for (at,) in conn.execute(
            "SELECT at FROM events WHERE kind = 'step.completed'")]
    done = {run_id for run_id, _ in ends}
    if done != set(runs) or len(ends) != len(runs):
        raise SystemExit(f"{len(set(runs) - done)} of {len(runs)} runs did not complete "
                         f"(or one completed twice: {len(ends)} completions)")
    first_claim, last_end = claims[0][1], max(at for _, at in ends)
    owners_of: dict[str, set[int]] = {}
    first_by_pid: dict[int, float] = {}
    started: dict[str, float] = {}  # each run's first claim
    for run_id, at, owner in claims:
        started.setdefault(run_id, at)
        owners_of.setdefault(run_id, set()).add(_pid(owner))
        first_by_pid.setdefault(_pid(owner), at)
    split = Counter(min(o) for o in owners_of.values() if len(o) == 1)
    makespan = last_end - first_claim
    peak = _peak_rate(steps, first_claim)
    return {"makespan_s": makespan, "makespan_over_ideal": makespan / IDEAL,
            "starts_spread_s": max(started.values()) - first_claim,
            "peak_steps_per_s": peak, "floor_over_ideal": len(steps) / peak / IDEAL,
            "claims": len(claims), "extra_claims": len(claims) - CALLS_PER_PIPELINE * len(runs),
            "runs_by_worker": sorted(split.values(), reverse=True),
            "runs_moved": sum(len(o) > 1 for o in owners_of.values()),
            "first_claim_after_spawn_s": sorted(at - spawned for at in first_by_pid.values())}


def _peak_rate(times: list[float], start: float, window: float = 0.1) -> float:
    """The most steps completed in any ``window`` seconds (bins from ``start``), per
    second: the pass's throughput once every worker is saturated."""
    bins = Counter(int((at - start) / window) for at in times)
    return max(bins.values()) / window


async def _check(db: Path, runs: list[str]) -> None:
    async with await SQLiteBlackboard.open(db) as store:
        for run_id in runs:
            await check_run(store, run_id)


def one_pass(workdir: Path, n: int, workers: int, timeout: float) -> Pass:
    """N workers serve ``n`` fresh pending runs on a fresh file; ``workers == 0`` is the
    one-process reference (``orchestra_side.s2``, as ``benchmarks.run`` runs S2)."""
    db = workdir / f"s2w-{workers}-{time.monotonic_ns()}.sqlite"
    if workers == 0:
        m = asyncio.run(orchestra_side.s2(n, "default", db))
        return {"makespan_s": m["makespan_s"], "makespan_over_ideal": m["makespan_over_ideal"],
                "cpu_s": [m["cpu_s"]]}
    runs = asyncio.run(_create(db, n))
    spawned, cpu = _serve(db, workers, timeout)
    figures = read_pass(db, runs, spawned)
    asyncio.run(_check(db, runs))
    return figures | {"cpu_s": [round(c, 2) for c in sorted(cpu.values(), reverse=True)]}


def _label(workers: int) -> str:
    return "in-loop" if workers == 0 else f"{workers} worker" + "s" * (workers > 1)


def _summary(values: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(values), 2), "min": round(min(values), 2),
            "max": round(max(values), 2)}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.s2_workers", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workers", default="1,2", help="worker counts (default 1,2)")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--pipelines", type=int, default=200)
    p.add_argument("--no-reference", action="store_true",
                   help="skip the one-process in-loop S2")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per pass")
    args = p.parse_args(argv)
    try:
        args.counts = [int(x) for x in args.workers.split(",")]
    except ValueError:
        p.error(f"--workers wants counts such as 1,2, got {args.workers!r}")
    if min(args.counts) < 1 or args.reps < 1 or args.pipelines < 1:
        p.error("--workers, --reps and --pipelines want numbers >= 1")
    return args


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    os.environ.setdefault("ORCHESTRA_PRICES", "fake=0/0")  # the fake model is free: no
    # "no price" warning from each worker's every run (the workers inherit this)
    passes = ([] if args.no_reference else [0]) + args.counts
    results: dict[int, list[Pass]] = {w: [] for w in passes}
    loads = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory(prefix="s2w-") as tmp:
        for rep in range(args.reps):
            for workers in passes if rep % 2 == 0 else passes[::-1]:
                r = one_pass(Path(tmp), args.pipelines, workers, args.timeout)
                results[workers].append(r)
                loads.append(os.getloadavg()[0])
                starts = [round(s, 2) for s in r.get("first_claim_after_spawn_s", ())]
                extra = "" if workers == 0 else (
                    f", runs by worker {r['runs_by_worker']}, moved {r['runs_moved']}, "
                    f"first claim after spawn {starts} s, extra claims {r['extra_claims']}; "
                    f"last run started {r['starts_spread_s']:.2f} s after the first, peak "
                    f"{r['peak_steps_per_s']:.0f} steps/s (all steps at that rate: "
                    f"{r['floor_over_ideal']:.2f}x ideal)")
                print(f"rep {rep + 1} {_label(workers)}: makespan {r['makespan_s']:.2f} s = "
                      f"{r['makespan_over_ideal']:.2f}x ideal, CPU {r['cpu_s']} s{extra}",
                      flush=True)
    out: dict[str, Any] = {"pipelines": args.pipelines, "reps": args.reps, "ideal_s": IDEAL,
                           "load_1min": _summary(loads)}
    for workers, rows in results.items():
        out[_label(workers).replace(" ", "_")] = {
            "makespan_over_ideal": _summary([r["makespan_over_ideal"] for r in rows]),
            "makespan_s": _summary([r["makespan_s"] for r in rows]),
            "cpu_s": _summary([sum(r["cpu_s"]) for r in rows])}
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
