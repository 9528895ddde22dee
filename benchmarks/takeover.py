"""How long a dead worker's tasks wait before another worker takes them over.

    python -m benchmarks.takeover [--trials 5] [--lease 3] [--workers 3]

Each trial: a fresh store holding one run of the fan-out pipeline
(``benchmarks/fanout.py``, each task's tool sleeping ``--tool-sleep`` seconds so
tasks are in flight), ``--workers`` ``orchestra worker`` processes serving it, and
one of them killed with SIGKILL while it holds leases. Measured from the kill to the
first and to the last of its tasks taken over by a surviving worker (the
``task.requeued`` events a takeover writes, on the store's clock). The bound a user
can rely on is the lease plus one heartbeat (a third of the lease). Medians of
``--trials``; measured, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from benchmarks.fanout import build
from orchestra import Coordinator, SQLiteBlackboard

REPO = Path(__file__).resolve().parents[1]


async def _create(db: Path, tasks: int, tool_sleep: float) -> None:
    run_input = {"tasks": tasks, "tool_sleep": tool_sleep}
    async with await SQLiteBlackboard.open(db) as store:
        await Coordinator(store, build(run_input)).start(run_input)


def _held(db: Path) -> Counter[int]:
    """Running tasks per worker pid (an owner id is host:pid:nonce)."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10) as conn:
        return Counter(int(o.split(":")[1]) for (o,) in conn.execute(
            "SELECT lease_owner FROM tasks WHERE status = 'running'"))


def trial(args: argparse.Namespace, tmp: Path) -> tuple[float, float, int]:
    db = tmp / "takeover.db"
    asyncio.run(_create(db, args.tasks, args.tool_sleep))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    argv = [sys.executable, "-m", "orchestra.cli.main", "worker", "--db", str(db),
            "--idle-exit", "1", "--lease", str(args.lease)]
    procs = {p.pid: p for p in (subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL)
                                for _ in range(args.workers))}
    try:
        deadline = time.monotonic() + 120
        while True:  # every worker holds leases: the work is spread
            held = _held(db) if db.exists() else Counter()
            if len(held) == len(procs) and time.monotonic() > deadline - 118:
                break
            if time.monotonic() > deadline:
                raise SystemExit("the workers did not all start working")
            time.sleep(0.05)
        time.sleep(args.lease)  # mid-way, with heartbeats going
        victim, count = _held(db).most_common(1)[0]
        os.kill(victim, signal.SIGKILL)
        killed = time.time()
        procs.pop(victim).wait()
        for p in procs.values():
            if p.wait(timeout=600) != 0:
                raise SystemExit(f"a worker exited with {p.returncode}")
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
    with sqlite3.connect(db) as conn:
        taken = [at for data, at in conn.execute(
            "SELECT data, at FROM events WHERE kind = 'task.requeued'")
            if int(json.loads(data)["owner"].split(":")[1]) == victim]
        left = conn.execute("SELECT COUNT(*) FROM tasks WHERE status != 'completed'").fetchone()[0]
    if left or not taken:
        raise SystemExit(f"trial failed: {left} tasks unfinished, {len(taken)} taken over")
    return min(taken) - killed, max(taken) - killed, count


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.takeover", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--trials", type=int, default=5)
    p.add_argument("--lease", type=float, default=3.0)
    p.add_argument("--workers", type=int, default=3)
    p.add_argument("--tasks", type=int, default=400)
    p.add_argument("--tool-sleep", type=float, default=0.2)
    args = p.parse_args(argv)
    firsts, lasts = [], []
    for i in range(args.trials):
        with tempfile.TemporaryDirectory() as tmp:
            first, last, count = trial(args, Path(tmp))
        firsts.append(first)
        lasts.append(last)
        print(f"trial {i + 1}: victim held {count} tasks; first taken over after "
              f"{first:.2f} s, all after {last:.2f} s", flush=True)
    bound = args.lease * 4 / 3
    print(f"\nlease {args.lease:g} s (bound: lease + one heartbeat = {bound:.2f} s), "
          f"{args.workers} workers, {args.trials} trials")
    print(f"kill -> first task taken over: median {statistics.median(firsts):.2f} s "
          f"[{min(firsts):.2f}-{max(firsts):.2f}]")
    print(f"kill -> all its tasks taken over: median {statistics.median(lasts):.2f} s "
          f"[{min(lasts):.2f}-{max(lasts):.2f}]")


if __name__ == "__main__":
    main()
