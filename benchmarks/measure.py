"""Side-neutral measurement loops for S1-S3, so that every side reports the same keys
measured the same way. A side supplies ``run_one(i)``, one complete pipeline with
thread / run id ``i``; these helpers do the warm-up, the clocks and the arithmetic."""

from __future__ import annotations

import asyncio
import sqlite3
import statistics
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks.workload import CALLS_PER_PIPELINE

RunOne = Callable[[int], Awaitable[None]]
Metrics = dict[str, Any]

S1_WARMUP = 5
S2_WARMUP = 5
S2_LATENCY = 0.05
S4_LATENCY = 0.05
SYNCHRONOUS_NAMES = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}


async def sequential(run_one: RunOne, n: int, warmup: int = S1_WARMUP) -> Metrics:
    """S1: ``warmup`` pipelines, then ``n`` one after another; wall and CPU of the ``n``."""
    for i in range(warmup):
        await run_one(i)
    wall0, cpu0 = time.perf_counter(), time.process_time()
    for i in range(warmup, warmup + n):
        await run_one(i)
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    steps = n * CALLS_PER_PIPELINE
    return {
        "pipelines": n,
        "steps": steps,
        "wall_s": wall,
        "cpu_s": cpu,
        "pipelines_per_s": n / wall,
        "ms_per_step": 1000 * wall / steps,
    }


async def concurrent(
    run_one: RunOne, n: int, latency: float = S2_LATENCY, warmup: int = S2_WARMUP
) -> Metrics:
    """S2: ``warmup`` pipelines at once, then ``n`` started at once on this loop.

    Latency of a pipeline = from the common start to its end; the ideal makespan is
    17 x ``latency`` (every pipeline overlapping)."""
    await asyncio.gather(*(run_one(i) for i in range(warmup)))
    start, cpu0 = time.perf_counter(), time.process_time()

    async def timed(i: int) -> float:
        await run_one(i)
        return time.perf_counter() - start

    latencies = await asyncio.gather(*(timed(i) for i in range(warmup, warmup + n)))
    makespan, cpu = time.perf_counter() - start, time.process_time() - cpu0
    ideal = CALLS_PER_PIPELINE * latency
    return {
        "pipelines": n,
        "makespan_s": makespan,
        "ideal_s": ideal,
        "makespan_over_ideal": makespan / ideal,
        "p50_latency_s": statistics.median(latencies),
        "max_latency_s": max(latencies),
        "cpu_s": cpu,
    }


def sqlite_sizes(db_path: Path) -> dict[str, int]:
    """Logical size (page_count x page_size, committed data incl. the WAL) and the bytes
    on disk of the database file with its -wal and -shm files."""
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        page_count = conn.execute("PRAGMA page_count").fetchone()[0]
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    finally:
        conn.close()
    disk = sum(
        p.stat().st_size
        for p in (db_path, Path(f"{db_path}-wal"), Path(f"{db_path}-shm"))
        if p.exists()
    )
    return {"logical_bytes": page_count * page_size, "disk_bytes": disk}


def s3_marks(turns: int) -> tuple[int, ...]:
    """Where S3 reads the DB size: 100 / 500 / 1,000 for the full 1,000 turns, and the
    same fractions of a shorter run."""
    return tuple(sorted({max(1, turns // 10), max(1, turns // 2), turns}))


def turn_durations(starts: Sequence[float], end: float) -> list[float]:
    """Per-turn seconds when turn k runs from ``starts[k]`` to ``starts[k + 1]`` (the
    last one to ``end``). S3 times a turn from the commit of the previous turn to the
    commit of this one; where a side commits each turn before the next model call, the
    model call start times are the same thing."""
    return [b - a for a, b in zip(starts, [*starts[1:], end], strict=True)]


def s3_metrics(durations: Sequence[float], sizes: dict[int, dict[str, int]]) -> Metrics:
    """Mean ms per turn over turns 2-51 and over the last 50 turns, and the sizes."""
    turns = len(durations)
    first = durations[1:51]
    last = durations[max(1, turns - 50) :]
    out: Metrics = {
        "turns": turns,
        "ms_per_turn_2_51": 1000 * statistics.fmean(first),
        "ms_per_turn_last50": 1000 * statistics.fmean(last),
    }
    for mark, size in sorted(sizes.items()):
        out[f"logical_mb_at_{mark}"] = size["logical_bytes"] / 1e6
        out[f"disk_mb_at_{mark}"] = size["disk_bytes"] / 1e6
    return out


def synchronous_name(value: int) -> str:
    return SYNCHRONOUS_NAMES.get(value, str(value))
