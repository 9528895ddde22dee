"""The benchmark harness CLI.

    python -m benchmarks.run [--quick] [--reps 3] [--scenarios S1,S2,S3,S4]
                             [--sides floor,langgraph,orchestra] [--out benchmarks/results]

Runs every (scenario, side, durability) ``--reps`` times, interleaving the sides (and
their settings) per repetition: rep 1 in order, rep 2 reversed, and so on; S4 runs
``--trials`` trials per kill point, interleaved the same way. Writes one JSON line per
measurement to ``<out>/results.jsonl`` and the medians with min-max to
``<out>/results.md``. The sides are described in ``benchmarks/sides/__init__.py``.

S5 (several ``orchestra worker`` processes on one store, throughput over the first and
the last 10% of the work at two store sizes; orchestra only) has its own command,
``python -m benchmarks.workers``; the worker-takeover time, ``python -m
benchmarks.takeover``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from benchmarks import report
from benchmarks.sides import KNOWN_SIDES, load_sides

SCENARIOS = ("S1", "S2", "S3", "S4")
KILL_POINTS = ("return", "next", "external")


@dataclass(frozen=True)
class Sizes:
    pipelines_s1: int = 200
    pipelines_s2: int = 200
    turns: int = 1000
    trials: int = 5


QUICK = Sizes(pipelines_s1=20, pipelines_s2=20, turns=100, trials=1)


def _csv(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.run",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--quick", action="store_true", help="tiny sizes, for a smoke test")
    p.add_argument("--reps", type=int, default=3, help="repetitions of S1-S3 (default 3)")
    p.add_argument("--scenarios", default=",".join(SCENARIOS))
    p.add_argument("--sides", default=",".join(KNOWN_SIDES), help="default: all known")
    p.add_argument("--durabilities", default="", help="only these settings (default all)")
    p.add_argument("--kill-points", default=",".join(KILL_POINTS), help="S4 kill points")
    p.add_argument("--pipelines", type=int, help="override S1 and S2 pipeline counts")
    p.add_argument("--turns", type=int, help="override the S3 turn count")
    p.add_argument("--trials", type=int, help="override S4 trials per kill point")
    p.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    p.add_argument("--workdir", type=Path, help="where the DBs go (default: a temp dir)")
    return p.parse_args(argv)  # fmt: skip


class Harness:
    def __init__(self, args: argparse.Namespace, sides: list[ModuleType], workdir: Path) -> None:
        base = QUICK if args.quick else Sizes()
        self.sizes = Sizes(
            pipelines_s1=args.pipelines or base.pipelines_s1,
            pipelines_s2=args.pipelines or base.pipelines_s2,
            turns=args.turns or base.turns,
            trials=args.trials or base.trials,
        )
        self.reps: int = args.reps
        self.only_durabilities = set(_csv(args.durabilities))
        self.kill_points = _csv(args.kill_points)
        self.sides = sides
        self.workdir = workdir
        self.records: list[dict[str, Any]] = []
        self.sink = (args.out / "results.jsonl").open("w", encoding="utf-8")

    def settings(self, side: ModuleType, scenario: str) -> list[str]:
        names: list[str] = side.durabilities(scenario)
        return [d for d in names if not self.only_durabilities or d in self.only_durabilities]

    def reps_for(self, side: ModuleType, scenario: str) -> int:
        cap: int = side.MAX_REPS.get(scenario, self.reps)
        return min(self.reps, cap)

    def record(self, scenario: str, side: ModuleType, durability: str, **fields: Any) -> None:
        rec = {"scenario": scenario, "side": side.NAME, "durability": durability, **fields}
        self.records.append(rec)
        self.sink.write(json.dumps(rec) + "\n")
        self.sink.flush()

    def run_scenario(self, scenario: str) -> None:
        sides = [s for s in self.sides if scenario in s.SCENARIOS]
        if scenario == "S4":
            self._run_s4(sides)
            return
        size = {"S1": self.sizes.pipelines_s1, "S2": self.sizes.pipelines_s2,
                "S3": self.sizes.turns}[scenario]  # fmt: skip
        for rep in range(self.reps):
            jobs = [(side, d) for side in sides if rep < self.reps_for(side, scenario)
                    for d in self.settings(side, scenario)]  # fmt: skip
            for side, durability in jobs if rep % 2 == 0 else reversed(jobs):
                fn: Callable[..., Any] = getattr(side, scenario.lower())
                db = self.workdir / f"{scenario}-{side.NAME}-{durability}-{rep}.sqlite"
                gc.collect()
                t0 = time.perf_counter()
                metrics = asyncio.run(fn(size, durability, db))
                _remove_db(db)
                self.record(scenario, side, durability, rep=rep + 1, **metrics)
                _progress(f"{scenario} rep {rep + 1}: {side.NAME} {durability}", metrics,
                          time.perf_counter() - t0)  # fmt: skip

    def _run_s4(self, sides: list[ModuleType]) -> None:
        for trial in range(self.sizes.trials):
            jobs = [(side, d, k) for k in self.kill_points for side in sides
                    for d in self.settings(side, "S4")]  # fmt: skip
            for side, durability, kill_point in jobs if trial % 2 == 0 else reversed(jobs):
                t0 = time.perf_counter()
                trial_dir = self.workdir / f"S4-{side.NAME}"
                metrics = side.s4_trial(kill_point, durability, trial_dir)
                shutil.rmtree(trial_dir, ignore_errors=True)
                self.record("S4", side, durability, trial=trial + 1, **metrics)
                _progress(f"S4 trial {trial + 1}: {side.NAME} {durability} {kill_point}",
                          metrics, time.perf_counter() - t0)  # fmt: skip


def _remove_db(db: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)


_SHOWN = ("ms_per_step", "makespan_over_ideal", "logical_mb_at_1000", "ms_per_turn_last50",
          "duplicates", "framework_s")  # fmt: skip


def _progress(what: str, metrics: dict[str, Any], seconds: float) -> None:
    shown = ", ".join(f"{k}={metrics[k]:.3g}" for k in _SHOWN if k in metrics)
    print(f"{what}: {shown} ({seconds:.1f} s)", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    scenarios = [s.upper() for s in _csv(args.scenarios)]
    unknown = set(scenarios) - set(SCENARIOS)
    if unknown:
        raise SystemExit(f"unknown scenarios {sorted(unknown)}; known: {', '.join(SCENARIOS)}")
    sides = load_sides(_csv(args.sides))
    if not sides:
        raise SystemExit("no side to run")
    args.out.mkdir(parents=True, exist_ok=True)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="orchestra-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    harness = Harness(args, sides, workdir)
    started = time.perf_counter()
    try:
        for scenario in scenarios:
            harness.run_scenario(scenario)
    finally:
        harness.sink.close()
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    elapsed = time.perf_counter() - started
    notes = [
        f"sizes: S1 {harness.sizes.pipelines_s1} pipelines after 5 warm-up, S2 "
        f"{harness.sizes.pipelines_s2} pipelines, S3 {harness.sizes.turns} turns, S4 "
        f"{harness.sizes.trials} trial(s) per kill point" + (" (--quick)" if args.quick else ""),
        f"repetitions: {args.reps}, sides interleaved (odd reps in order, even reps reversed)",
        *(f"{side.NAME} {sc}: capped at {n} repetition(s) to keep the run short"
          for side in sides for sc, n in side.MAX_REPS.items() if sc in scenarios),
        f"whole run: {elapsed:.0f} s; sides: {', '.join(s.NAME for s in sides)}",
    ]  # fmt: skip
    text = report.markdown(harness.records, report.environment(), notes)
    (args.out / "results.md").write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
