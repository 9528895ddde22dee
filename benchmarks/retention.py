"""Fork and prune timings (issue 13's targets).

    python -m benchmarks.retention [--turns 1000] [--runs 1000] [--reps 3]

* **fork**: a run of ``--turns`` turns (S3's one-agent run: each turn a task whose
  handoff creates the next) is forked right after its middle turn's ``task.completed``;
  ``SQLiteBlackboard.fork_run`` is timed, median of ``--reps`` forks.
  Target: 1,000 turns forked at turn 500 in <= 50 ms.
* **prune**: ``orchestra demo`` runs once; its run is copied (a fork at its last event
  is a whole copy, finished) until the store holds ``--runs`` finished demo runs, then
  ``prune_runs(keep=0)`` deletes them all and is timed; repeated ``--reps`` times.
  Target: 1,000 finished demo runs pruned in <= 5 s.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.sides import orchestra_side
from orchestra import SQLiteBlackboard

REPO = Path(__file__).resolve().parents[1]


async def fork_times(turns: int, reps: int, workdir: Path
                     ) -> tuple[list[float], list[float], int]:
    """Wall and CPU milliseconds of ``reps`` forks of an S3 run at its middle turn."""
    db = workdir / "s3.db"
    await orchestra_side.s3(turns, "default", db)
    async with await SQLiteBlackboard.open(db) as store:
        [run] = await store.list_runs()
        completed = [e.seq for e in await store.events(run.id, limit=10 * turns + 100)
                     if e.kind == "task.completed"]
        at = completed[len(completed) // 2 - 1]  # right after turn turns/2
        times, cpu = [], []
        for _ in range(reps):
            start, start_cpu = time.perf_counter(), time.process_time()
            fork = await store.fork_run(run.id, at)
            times.append((time.perf_counter() - start) * 1000)
            cpu.append((time.process_time() - start_cpu) * 1000)
        messages = len(await store.get_messages(f"{fork.id}/architect"))
    return times, cpu, messages


def demo_store(workdir: Path) -> Path:
    """A store holding one finished ``orchestra demo`` run."""
    db = workdir / "demo.db"
    subprocess.run([sys.executable, "-m", "orchestra.cli.main", "demo", "--db", str(db),
                    "--workspace", str(workdir / "ws")], cwd=REPO, check=True,
                   capture_output=True)
    return db


async def prune_time(template: Path, runs: int, workdir: Path) -> tuple[float, float, int]:
    """Fill a copy of ``template`` with ``runs`` finished demo runs; time pruning them all."""
    db = workdir / "prune.db"
    shutil.copyfile(template, db)
    async with await SQLiteBlackboard.open(db) as store:
        [demo] = await store.list_runs()
        for _ in range(runs - 1):
            await store.fork_run(demo.id, demo.last_seq)
        assert len(await store.list_runs(limit=runs + 1)) == runs
        start, start_cpu = time.perf_counter(), time.process_time()
        pruned = await store.prune_runs(keep=0)
        elapsed, cpu = time.perf_counter() - start, time.process_time() - start_cpu
        assert len(pruned.runs) == runs and await store.list_runs() == []
    for path in workdir.glob("prune.db*"):
        path.unlink()
    return elapsed, cpu, pruned.rows


def _fmt(values: list[float], unit: str) -> str:
    return f"{statistics.median(values):.2f} {unit} [{min(values):.2f}-{max(values):.2f}]"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        forks, fork_cpu, messages = await fork_times(args.turns, args.reps, Path(tmp))
        print(f"fork of a {args.turns}-turn run at turn {args.turns // 2} "
              f"({messages} messages kept): {_fmt(forks, 'ms')}, CPU {_fmt(fork_cpu, 'ms')} "
              f"(median [min-max] of {args.reps}; target <= 50 ms)")
        template = demo_store(Path(tmp))
        prunes, prune_cpu, rows = [], [], 0
        for _ in range(args.reps):
            elapsed, cpu, rows = await prune_time(template, args.runs, Path(tmp))
            prunes.append(elapsed)
            prune_cpu.append(cpu)
        print(f"prune of {args.runs} finished demo runs ({rows} rows): {_fmt(prunes, 's')}, "
              f"CPU {_fmt(prune_cpu, 's')} (median [min-max] of {args.reps}; target <= 5 s)")
        print(f"load average during the run: {os.getloadavg()[0]:.1f} "
              f"({os.cpu_count()} cores)")


if __name__ == "__main__":
    asyncio.run(main())
