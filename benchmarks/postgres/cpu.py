"""Where S5's CPU goes on PostgreSQL: CPU per task by component, for N workers.

    python -m benchmarks.postgres.cpu [--workers 1,4] [--runs 4] [--tasks 100] [--reps 3]
        [--mode cpu] [--statements]

On 2 cores more worker processes cannot add CPU, so N workers keep up with one only
if the CPU spent per task does not grow with N. One S5 pass
(``benchmarks.postgres.workers``) per count and repetition, while a thread samples
every 20 ms the CPU (user+sys, ``psutil``) of each worker process and of every
process of the PostgreSQL server (backends, walwriter...). Reported per task,
medians of ``--reps``:

- ``worker_ms`` / ``server_ms``: the whole pass (workers' start-up included);
- ``worker_win_ms`` / ``server_win_ms``: the rate's window only (first completion
  to last, as S5 measures), i.e. steady state;
- ``start_s``: from spawning the workers to the first completion, and
  ``worker_start_cpu_s``: the workers' CPU before it (imports, opening the store);
  ``all_up_s``: from the first completion to the last worker's first claim (before
  that, the window counts workers still starting up);
- ``mid_*``: the middle 60% of the completions (no start-up, no tail): tasks/s, CPU
  per task and context switches per task (``*_switches``);
- ``xacts``: transactions committed per task (``pg_stat_database``);
- with ``--statements`` (one extra pass per count, the server logging every statement
  of the database: slower, so not timed): statements per task by kind (first words).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import threading
import time
from collections import Counter
from typing import Any

import asyncpg
import psutil

from benchmarks.postgres import workers as pg_workers
from benchmarks.postgres.local import LocalPostgres, shared_server
from benchmarks.workers import spawn

Series = dict[int, list[tuple[float, tuple[float, float]]]]


def _cpu(proc: psutil.Process) -> tuple[float, float]:
    """A process's CPU seconds (user+sys) and context switches so far."""
    t, c = proc.cpu_times(), proc.num_ctx_switches()
    return float(t.user + t.system), float(c.voluntary + c.involuntary)


def _sample(procs: list[psutil.Process], server: psutil.Process, stop: threading.Event,
            workers: Series, backends: Series) -> None:
    while not stop.is_set():
        now = time.time()
        for series, group in ((workers, procs), (backends, [server, *server.children()])):
            for p in group:
                try:
                    series.setdefault(p.pid, []).append((now, _cpu(p)))
                except psutil.Error:
                    pass  # exited: its last sample stands
        time.sleep(0.02)


def _at(points: list[tuple[float, tuple[float, float]]], t: float, i: int) -> float:
    """A process's CPU seconds (``i`` 0) or context switches (1) at time ``t`` (the last
    sample before it; 0 before its first)."""
    value = 0.0
    for when, sample in points:
        if when > t:
            break
        value = sample[i]
    return value


def _between(series: Series, start: float, end: float, i: int = 0) -> float:
    return sum(_at(p, end, i) - _at(p, start, i) for p in series.values())


async def _stats(dsn: str) -> tuple[int, list[float], list[float]]:
    conn = await asyncpg.connect(dsn)
    try:
        xacts = await conn.fetchval(
            "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()")
        done = await conn.fetch(
            "SELECT updated_at FROM tasks WHERE status = 'completed' ORDER BY updated_at")
        firsts = await conn.fetch(  # each worker process's first claim (owner host:pid:nonce)
            "SELECT min(at) FROM events WHERE kind = 'task.claimed' "
            "GROUP BY split_part(data::json->>'owner', ':', 2)")
    finally:
        await conn.close()
    return int(xacts), [float(r[0]) for r in done], [float(r[0]) for r in firsts]


def one_pass(server: LocalPostgres, n: int, runs: int, tasks: int, mode: str,
             log_statements: bool = False) -> dict[str, Any]:
    name = "c" + os.urandom(4).hex()
    dsn = server.create_database(name)
    latency, concurrency = pg_workers.MODES[mode]
    asyncio.run(pg_workers._create(dsn, runs, tasks, latency))
    if log_statements:
        server.psql(f"ALTER DATABASE \"{name}\" SET log_statement = 'all'")
        log = server.root / "log"
        offset = log.stat().st_size
    xacts0, _, _ = asyncio.run(_stats(dsn))
    postmaster = psutil.Process(server._proc.pid if server._proc else 0)
    stop = threading.Event()
    workers: Series = {}
    backends: Series = {}
    t0 = time.time()
    procs = spawn(dsn, n, None, concurrency)
    sampler = threading.Thread(target=_sample, args=(
        [psutil.Process(p.pid) for p in procs], postmaster, stop, workers, backends))
    sampler.start()
    try:
        for p in procs:
            if p.wait(timeout=1800) != 0:
                raise SystemExit(f"a worker exited with {p.returncode}")
    finally:
        stop.set()
        sampler.join()
    t_end = time.time()
    xacts1, done, firsts = asyncio.run(_stats(dsn))
    count = len(done)
    first, last = done[0], done[-1]
    lo, hi = count // 5, count - count // 5  # the middle 60%: no start-up, no tail
    out: dict[str, Any] = {
        "workers": n, "tasks_per_s": (count - 1) / (last - first), "start_s": first - t0,
        "worker_ms": 1000 * _between(workers, t0, t_end) / count,
        "server_ms": 1000 * _between(backends, t0, t_end) / count,
        "worker_win_ms": 1000 * _between(workers, first, last) / (count - 1),
        "server_win_ms": 1000 * _between(backends, first, last) / (count - 1),
        "worker_start_cpu_s": _between(workers, t0, first),
        "all_up_s": max(firsts) - first,
        "mid_tasks_per_s": (hi - lo) / (done[hi] - done[lo]),
        "worker_mid_ms": 1000 * _between(workers, done[lo], done[hi]) / (hi - lo),
        "server_mid_ms": 1000 * _between(backends, done[lo], done[hi]) / (hi - lo),
        "worker_mid_switches": _between(workers, done[lo], done[hi], 1) / (hi - lo),
        "server_mid_switches": _between(backends, done[lo], done[hi], 1) / (hi - lo),
        "xacts": (xacts1 - xacts0) / count}
    if log_statements:
        with log.open("rb") as f:
            f.seek(offset)
            text = f.read().decode(errors="replace")
        kinds = Counter(_kind(m) for m in re.findall(r"(?:statement|execute [^:]*): (.*)", text))
        out["statements"] = {k: round(v / count, 2) for k, v in kinds.most_common(15)}
    return out


def _kind(sql: str) -> str:
    """A statement's first few words (enough to tell a claim from a step or a read)."""
    words = re.sub(r"\s+", " ", sql).strip().split(" ")
    return " ".join(words[:6])[:70]


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.postgres.cpu", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workers", default="1,4")
    p.add_argument("--runs", type=int, default=4)
    p.add_argument("--tasks", type=int, default=100, help="tasks per run")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--mode", default="cpu", choices=sorted(pg_workers.MODES))
    p.add_argument("--statements", action="store_true")
    args = p.parse_args(argv)
    server = shared_server()
    counts = [int(n) for n in args.workers.split(",")]
    rows: dict[int, list[dict[str, Any]]] = {n: [] for n in counts}
    for rep in range(args.reps):
        for n in counts if rep % 2 == 0 else reversed(counts):
            rows[n].append(one_pass(server, n, args.runs, args.tasks, args.mode))
            print(json.dumps({k: round(v, 3) if isinstance(v, float) else v
                              for k, v in rows[n][-1].items()}), flush=True)
    print(f"medians of {args.reps}, {args.runs} runs x {args.tasks} tasks, mode {args.mode}, "
          f"load {os.getloadavg()[0]:.2f}")
    for n, passes in rows.items():
        print(json.dumps({"workers": n, **{k: round(statistics.median(r[k] for r in passes), 3)
                                           for k in passes[0] if k != "workers"}}))
    if args.statements:
        for n in counts:
            found = one_pass(server, n, args.runs, args.tasks, args.mode, log_statements=True)
            print(json.dumps({"workers": n, "statements_per_task": found["statements"]},
                             indent=1))


if __name__ == "__main__":
    main()
