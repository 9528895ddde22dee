"""The scale test: many concurrent runs on one PostgreSQL, N workers, a kill and a restart.

    python -m benchmarks.scale [--runs 1000] [--workers 1,2,4,8] [--duration 120]
        [--seed 1] [--latency 1,5] [--lease 10] [--drain 120]

Per worker count N, on a fresh database of one PostgreSQL server (the pgserver wheel's,
as the other PostgreSQL benchmarks start it): ``--runs`` runs of
``benchmarks/scale_pipeline.py`` (a chain of tasks per run, three journaled steps each,
every model call waiting a seeded ``--latency`` 1-5 s) are served by N ``orchestra
worker`` processes for ``--duration`` seconds. At 30% of it the worker holding the most
tasks is killed with SIGKILL (and a replacement started, as a supervisor would: N stays
N, and N = 1 goes on); at 60% the PostgreSQL server is restarted (fast shutdown, cutting every
connection; the workers must reconnect). After the deadline each run finishes its
current task and stops; the workers exit once idle.

Reported per N, from the store (``benchmarks/scale_report.py``): tasks/s and steps/s
in the window, p50/p99 claim latency (a handed-off task from its creation to its
claim; a run's first task from the workers' start), takeovers, tasks run twice vs in
flight at the kill (they must be the same tasks), every run finished, event seqs
gap-free, the store's size, and the server's CPU per journaled step (from the pass's
start to the restart: the postmaster is this process's child, so its and its backends'
CPU is read from RUSAGE_CHILDREN when it stops; the killed worker's is taken out), and
the server's transactions per journaled step (``pg_stat_database``: the workers' polls
included). The machine's cores are shared by the server, the workers and this driver.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.postgres.local import LocalPostgres
from benchmarks.scale_pipeline import build
from benchmarks.scale_report import held, report
from benchmarks.workers import spawn
from orchestra import Coordinator
from orchestra.store.postgres import PostgresBlackboard

KILL_AT, RESTART_AT = 0.3, 0.6
"""When in the window the worker is killed and the server restarted (fractions)."""


async def _create(dsn: str, inputs: list[dict[str, Any]]) -> None:
    async with await PostgresBlackboard.open(dsn) as store:
        for inp in inputs:
            await Coordinator(store, build(inp)).start(inp)


def _children_cpu() -> float:
    """CPU seconds of this process's exited children (the server, once stopped)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _exit_code(proc: subprocess.Popen[bytes], deadline: float) -> int | None:
    """The worker's exit code, or None if it was still serving at the deadline (the
    runs left unfinished then show in the report)."""
    try:
        return proc.wait(timeout=max(0.0, deadline - time.time()))
    except subprocess.TimeoutExpired:
        return None


def _sleep_until(t: float) -> None:
    time.sleep(max(0.0, t - time.time()))


def one_pass(server: LocalPostgres, workers: int, args: argparse.Namespace) -> dict[str, Any]:
    """One worker count: create the runs, serve them, kill, restart, drain, report."""
    dsn = server.create_database("scale" + os.urandom(4).hex())
    low, high = args.latency
    with tempfile.TemporaryDirectory() as tmp:
        effects = str(Path(tmp) / "effects")
        until = time.time() + args.duration + 0.02 * args.runs  # + creating the runs
        asyncio.run(_create(dsn, [{"until": until, "seed": args.seed, "run": i,
                                   "latency": [low, high], "effects": effects}
                                  for i in range(args.runs)]))
        server.stop()  # a fresh postmaster: its CPU, read at the mid-pass restart, is the
        server.start()  # serving's alone (not the database's creation and migrations)
        cpu = _children_cpu()
        procs = spawn(dsn, workers, args.lease, None, idle_exit=2)
        start = time.time()
        try:
            _sleep_until(start + KILL_AT * (until - start))
            busiest = asyncio.run(held(dsn))
            victim = max(procs, key=lambda p: len(busiest.get(p.pid, ())))
            victim.kill()
            _, status, usage = os.wait4(victim.pid, 0)  # its CPU is not the server's
            victim.returncode = os.waitstatus_to_exitcode(status)
            cpu += usage.ru_utime + usage.ru_stime
            killed_at = time.time()
            in_flight = asyncio.run(held(dsn)).get(victim.pid, set())
            procs.remove(victim)
            procs.append(spawn(dsn, 1, args.lease, None, idle_exit=2)[0])
            _sleep_until(start + RESTART_AT * (until - start))
            down = time.time()
            server.stop()  # the postmaster is this process's child: its CPU and its
            cpu = _children_cpu() - cpu  # backends' land in RUSAGE_CHILDREN once it exits
            server.start()
            downtime = time.time() - down
            codes = [_exit_code(p, until + args.drain) for p in procs]
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
        keys = Path(effects).read_text().split() if os.path.exists(effects) else []
    figures = asyncio.run(report(dsn, start, until, victim.pid, killed_at, down))
    return {"workers": workers, **figures, "held_at_kill": len(in_flight),
            "pg_cpu_s_to_restart": round(cpu, 1),
            "pg_cpu_ms_per_step": round(1000 * cpu / max(1, figures["steps_to_restart"]), 2),
            "effects_run_twice": len(keys) - len(set(keys)),
            "restart_downtime_s": round(downtime, 2),
            "worker_exit_codes": codes, "window_s": round(until - start, 1)}


def _pair(text: str) -> tuple[float, float]:
    low, _, high = text.partition(",")
    values = float(low), float(high or low)
    if not 0 <= values[0] <= values[1]:
        raise argparse.ArgumentTypeError(f"--latency wants LOW,HIGH seconds, got {text!r}")
    return values


COLUMNS = ("workers", "tasks_per_s", "steps_per_s", "claim_latency_p50_ms",
           "claim_latency_p99_ms", "first_claim_p50_s", "first_claim_p99_s", "takeovers",
           "in_flight_at_kill", "run_twice",
           "runs_completed", "runs", "store_mb", "pg_cpu_ms_per_step", "worker_exit_codes")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.scale", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=1000, help="concurrent runs")
    p.add_argument("--workers", default="1,2,4,8", help="worker counts, one pass each")
    p.add_argument("--duration", type=float, default=120.0, help="seconds per pass")
    p.add_argument("--seed", type=int, default=1, help="of the model latencies")
    p.add_argument("--latency", type=_pair, default=(1.0, 5.0),
                   help="LOW,HIGH seconds per model call (default 1,5)")
    p.add_argument("--lease", type=float, default=10.0, help="task lease of the workers")
    p.add_argument("--drain", type=float, default=120.0,
                   help="seconds the runs may take to finish after the window")
    args = p.parse_args(argv)
    args.counts = [int(n) for n in args.workers.split(",") if n.strip().isdigit()]
    if len(args.counts) != len(args.workers.split(",")) or min(args.counts) < 1 \
            or args.runs < 1:
        p.error("--workers wants counts >= 1 (e.g. 1,2,4) and --runs >= 1")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    server = LocalPostgres()  # its own server: this benchmark restarts it
    server.start()
    rows = []
    try:
        for n in args.counts:
            rows.append(one_pass(server, n, args))
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    finally:
        server.close()
    print(f"scale: {args.runs} runs, {args.duration:.0f} s per pass, model calls "
          f"{args.latency[0]:g}-{args.latency[1]:g} s (seed {args.seed}), lease {args.lease:g} s")
    print("| " + " | ".join(COLUMNS) + " |")
    print("|" + "---|" * len(COLUMNS))
    for row in rows:
        print("| " + " | ".join(str(row[c]) for c in COLUMNS) + " |")


if __name__ == "__main__":
    main()
