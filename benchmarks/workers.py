"""S5: N ``orchestra worker`` processes on one store, throughput first vs last.

    python -m benchmarks.workers [--workers 4] [--runs 10] [--tasks 1000] [--reps 3]

Creates ``--runs`` runs of the fan-out pipeline (``benchmarks/fanout.py``: three
journaled steps per task, a tool side effect each) with ``--tasks`` tasks each,
starts ``--workers`` workers on the file, and waits until every run is done. From
the tasks' completion times (the store's clock) it reports tasks/s over the first
and the last 10% of the work and their ratio (target: last/first >= 0.8).

It does this at two store sizes: a fresh file, and the same file again once it
already holds the first pass's runs (``--runs`` x ``--tasks`` finished tasks), so a
cost that grows with the store shows as a lower second-pass throughput. Medians of
``--reps`` repetitions (min-max in brackets). Measured, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.fanout import build
from orchestra import Coordinator, SQLiteBlackboard

REPO = Path(__file__).resolve().parents[1]


async def _create(db: Path, runs: int, tasks: int) -> None:
    run_input = {"tasks": tasks}
    async with await SQLiteBlackboard.open(db) as store:
        coord = Coordinator(store, build(run_input))
        for _ in range(runs):
            await coord.start(run_input)


def spawn(db: Path | str, workers: int, lease: float | None,
          concurrency: int | None = None, idle_exit: float = 1) -> list[subprocess.Popen[bytes]]:
    """Start ``workers`` ``orchestra worker`` processes on ``db`` (also used by
    ``benchmarks.scale``, which kills one); ``lease`` / ``concurrency`` (tasks each worker
    runs at once per run) None keep the CLI's defaults.

    Workers may write and reuse bytecode caches even where ``PYTHONDONTWRITEBYTECODE``
    is set (this VM sets it): a deployed worker imports compiled modules, and compiling
    orchestra's ~170 modules in every process would count ~0.1-0.25 s of each worker's
    start-up CPU that no installed worker pays."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(REPO)
    argv = [sys.executable, "-m", "orchestra.cli.main", "worker", "--db", str(db),
            "--idle-exit", str(idle_exit), *(() if lease is None else ("--lease", str(lease))),
            *(() if concurrency is None else ("--concurrency", str(concurrency)))]
    return [subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL) for _ in range(workers)]


def serve(db: Path | str, workers: int, lease: float | None, timeout: float,
          concurrency: int | None = None) -> None:
    """Run ``workers`` worker processes (``spawn``) on ``db`` until all of them are idle
    (also used by ``benchmarks.postgres.workers``)."""
    procs = spawn(db, workers, lease, concurrency)
    try:
        for p in procs:
            if p.wait(timeout=timeout) != 0:
                raise SystemExit(f"a worker exited with {p.returncode}")
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()


def _rates(db: Path, since: float) -> tuple[float, float, float, float]:
    """tasks/s over the first and the last 10% of the tasks finished after ``since``
    (from the first completion on: the workers' start-up is not throughput), over the
    80-90% window (late, but before the runs drain: as runs finish, fewer tasks are
    left to run at once), and over the whole pass (start-up included)."""
    with sqlite3.connect(db) as conn:
        done = [t for (t,) in conn.execute(
            "SELECT updated_at FROM tasks WHERE status = 'completed' AND updated_at > ? "
            "ORDER BY updated_at", (since,))]
        pending = conn.execute("SELECT COUNT(*) FROM tasks WHERE status != 'completed'"
                               ).fetchone()[0]
    if pending or len(done) < 20:
        raise SystemExit(f"the pass did not finish: {pending} tasks not completed")
    tenth = len(done) // 10
    first = tenth / (done[tenth] - done[0])
    last = tenth / (done[-1] - done[-tenth - 1])
    late = tenth / (done[-tenth - 1] - done[-2 * tenth - 1])
    return first, last, late, len(done) / (done[-1] - since)


def one_pass(db: Path, args: argparse.Namespace) -> tuple[float, float, float, float]:
    asyncio.run(_create(db, args.runs, args.tasks))
    since = time.time()
    serve(db, args.workers, args.lease, args.timeout)
    return _rates(db, since)


def _fmt(values: list[float]) -> str:
    return f"{statistics.median(values):.0f} [{min(values):.0f}-{max(values):.0f}]"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.workers", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workers", type=int, default=4)
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--tasks", type=int, default=1000, help="tasks per run")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--lease", type=float, default=30.0)
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds per pass")
    args = p.parse_args(argv)
    results: dict[str, list[tuple[float, float, float, float]]] = {"fresh": [], "grown": []}
    for rep in range(args.reps):
        with tempfile.TemporaryDirectory() as tmp:
            db = Path(tmp) / "s5.db"
            for size in ("fresh", "grown"):
                results[size].append(one_pass(db, args))
                first, last, late, whole = results[size][-1]
                print(f"rep {rep + 1} {size:<5}: first 10% {first:.0f} tasks/s, last 10% "
                      f"{last:.0f}, last/first {last / first:.2f}, 80-90% {late:.0f}, "
                      f"whole pass {whole:.0f}", flush=True)
    print(f"\nS5: {args.workers} workers, {args.runs} runs x {args.tasks} tasks per pass, "
          f"medians of {args.reps} [min-max]")
    print("| store | first 10% tasks/s | last 10% tasks/s | last/first | 80-90% tasks/s | "
          "whole pass |")
    print("|---|---|---|---|---|---|")
    for size, rows in results.items():
        label = "fresh" if size == "fresh" else \
            f"holding {args.runs * args.tasks:,} finished tasks"
        ratios = [r[1] / r[0] for r in rows]
        print(f"| {label} | {_fmt([r[0] for r in rows])} | {_fmt([r[1] for r in rows])} | "
              f"{statistics.median(ratios):.2f} [{min(ratios):.2f}-{max(ratios):.2f}] | "
              f"{_fmt([r[2] for r in rows])} | {_fmt([r[3] for r in rows])} |")


if __name__ == "__main__":
    main()
