"""kill -9 torture of the blackboard example (``examples/research_board.py``).

Each trial is one run of the example on a fresh SQLite file: a child process drives it
(its model answers after ``--delay`` seconds), the parent SIGKILLs the child's whole
process group at a random instant (uniform in ``[0, --window]`` after the child says it
is driving), and a new child resumes the run; again, until ``--kills`` kills are done
(a run that completes first ends its trial, and the next trial starts a new run). Every
run is then finished by a child left alone, and checked against an uninterrupted run:

* the board is the same: the same entries (type, author, scope, body), none lost, none
  twice;
* no consumption doubled: one task per (entry, role), each with its consumption record;
* the run completed.

    python -m benchmarks.board_torture --kills 100            # the benchmark (~2 min)
    python -m benchmarks.board_torture --kills 5 --questions 3   # what CI runs

Prints one JSON line: kills (``mid_run``: those that left a run part done), trials,
seconds, and the checks' findings (empty = passed).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
DRIVING = "driving"


# -- the child: the example, driven or resumed ----------------------------------------------
async def _child(db: Path, questions: int, delay: float) -> str:
    from examples.research_board import build, offline_model
    from orchestra import Coordinator, FunctionModel, ModelRequest, SQLiteBlackboard

    async def slow(request: ModelRequest) -> str:
        await asyncio.sleep(delay)
        return offline_model(request)

    pipeline = build({})
    model = FunctionModel(slow)
    async with await SQLiteBlackboard.open(db) as store:
        coordinator = Coordinator(store, pipeline, models={r.name: model for r in pipeline.roles})
        runs = await store.list_runs()  # one run per file: start it, or carry it on
        print(DRIVING, flush=True)
        if runs and runs[0].status == "completed":
            return runs[0].status
        run = await (coordinator.resume(runs[0].id) if runs else
                     coordinator.run({"subject": "tides", "questions": questions}))
        return run.status


# -- the parent -----------------------------------------------------------------------------
def _spawn(db: Path, questions: int, delay: float) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "benchmarks.board_torture", "--child", "--db", str(db),
         "--questions", str(questions), "--delay", str(delay)],
        cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=db.with_suffix(".err").open("a"),
        text=True, start_new_session=True)


def _finish(db: Path, questions: int, delay: float) -> str:
    proc = _spawn(db, questions, delay)
    out, _ = proc.communicate(timeout=600)
    return out.strip().splitlines()[-1] if out.strip() else f"exit {proc.returncode}"


def _kill_once(db: Path, questions: int, delay: float, window: float,
               rng: random.Random) -> bool:
    """Start a child, SIGKILL it at a random instant; whether it was killed (False: it
    finished first)."""
    proc = _spawn(db, questions, delay)
    assert proc.stdout is not None
    try:
        line = proc.stdout.readline()  # the child is about to drive (imports, store open)
        if line.strip() != DRIVING:
            proc.wait(timeout=60)
            raise RuntimeError(f"the child did not start: exit {proc.returncode}: "
                               f"{db.with_suffix('.err').read_text()[-2000:]}")
        time.sleep(rng.uniform(0, window))
        if proc.poll() is not None:
            return False
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        return True
    finally:
        proc.stdout.close()
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)


def board(db: Path) -> list[tuple[str, str, str, str]]:
    """The run's board as a multiset: (type, author's role, scope, body), sorted."""
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute("SELECT type, author, scope, body FROM entries").fetchall()
    finally:
        conn.close()
    return sorted((t, a.partition("/")[2], s, json.dumps(json.loads(b), sort_keys=True))
                  for t, a, s, b in rows)


def problems(db: Path, reference: list[tuple[str, str, str, str]]) -> list[str]:
    """What is wrong with the finished run in ``db`` (nothing: it passed)."""
    found = []
    conn = sqlite3.connect(db)
    try:
        [(status,)] = conn.execute("SELECT status FROM runs").fetchall()
        doubled = conn.execute(
            "SELECT cause, role, COUNT(*) FROM tasks WHERE cause LIKE 'entry:%' "
            "GROUP BY cause, role HAVING COUNT(*) > 1").fetchall()
        unrecorded = conn.execute(
            "SELECT COUNT(*) FROM tasks t WHERE cause LIKE 'entry:%' AND NOT EXISTS ("
            "SELECT 1 FROM consumptions c WHERE c.task_id = t.id)").fetchone()[0]
        dangling = conn.execute(
            "SELECT COUNT(*) FROM consumptions c WHERE NOT EXISTS ("
            "SELECT 1 FROM tasks t WHERE t.id = c.task_id)").fetchone()[0]
    finally:
        conn.close()
    if status != "completed":
        found.append(f"run ended {status}")
    if doubled:
        found.append(f"consumptions doubled: {doubled[:3]}")
    if unrecorded or dangling:
        found.append(f"{unrecorded} triggered tasks without a consumption, {dangling} "
                     "consumptions without a task")
    got = board(db)
    if got != reference:
        lost = Counter(reference) - Counter(got)
        extra = Counter(got) - Counter(reference)
        found.append(f"board differs: lost {list(lost)[:3]}, extra {list(extra)[:3]}")
    return found


def _mid_run(db: Path) -> int:
    """1 if the kill left the run part done (begun, not finished), else 0."""
    if not db.exists():
        return 0
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute("SELECT status FROM runs").fetchall()
        entries = conn.execute("SELECT COUNT(*) FROM entries").fetchone()[0]
    finally:
        conn.close()
    return int(bool(rows) and rows[0][0] != "completed" and entries > 0)


@dataclass
class Report:
    kills: int = 0
    mid_run: int = 0
    """Kills that left a run part done (entries posted, not completed)."""
    trials: int = 0
    seconds: float = 0.0
    questions: int = 0
    problems: list[str] = field(default_factory=list)


def torture(workdir: Path, *, kills: int, questions: int = 3, delay: float = 0.02,
            window: float = 0.3, seed: int = 48) -> Report:
    """Kill runs of the example ``kills`` times at random instants; check every run."""
    rng = random.Random(seed)
    started = time.monotonic()
    workdir.mkdir(parents=True, exist_ok=True)
    reference_db = workdir / "reference.db"
    status = _finish(reference_db, questions, delay)
    if status != "completed":
        raise RuntimeError(f"the uninterrupted run ended {status!r}")
    reference = board(reference_db)
    report = Report(questions=questions)
    while report.kills < kills:
        report.trials += 1
        db = workdir / f"trial{report.trials}.db"
        while report.kills < kills and _kill_once(db, questions, delay, window, rng):
            report.kills += 1
            report.mid_run += _mid_run(db)
        _finish(db, questions, delay)  # left alone: resumes (or finds it done) and ends
        report.problems += [f"trial {report.trials}: {p}" for p in problems(db, reference)]
    report.seconds = round(time.monotonic() - started, 1)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=100)
    parser.add_argument("--questions", type=int, default=40)
    parser.add_argument("--delay", type=float, default=0.02, help="seconds per model call")
    parser.add_argument("--window", type=float, default=0.3,
                        help="kill uniformly within this many seconds of driving")
    parser.add_argument("--seed", type=int, default=48)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--db", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(asyncio.run(_child(args.db, args.questions, args.delay)), flush=True)
        return 0
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        report = torture(args.workdir or Path(tmp), kills=args.kills, questions=args.questions,
                         delay=args.delay, window=args.window, seed=args.seed)
    print(json.dumps(asdict(report)))
    return 1 if report.problems else 0


if __name__ == "__main__":
    sys.exit(main())
