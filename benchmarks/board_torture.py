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
import subprocess
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

from orchestra.store import Blackboard, SQLiteBlackboard

REPO_ROOT = Path(__file__).resolve().parents[1]
DRIVING = "driving"


# -- the child: the example, driven or resumed ----------------------------------------------
async def _child(spec: str, questions: int, delay: float) -> str:
    from examples.research_board import build, offline_model
    from orchestra import Coordinator, FunctionModel, ModelRequest

    async def slow(request: ModelRequest) -> str:
        await asyncio.sleep(delay)
        return offline_model(request)

    pipeline = build({})
    model = FunctionModel(slow)
    store = await _open(spec)
    try:
        coordinator = Coordinator(store, pipeline, models={r.name: model for r in pipeline.roles})
        runs = await store.list_runs()  # one run per file: start it, or carry it on
        print(DRIVING, flush=True)
        if runs and runs[0].status == "completed":
            return runs[0].status
        run = await (coordinator.resume(runs[0].id) if runs else
                     coordinator.run({"subject": "tides", "questions": questions}))
        return run.status
    finally:
        await store.close()


# -- the parent -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Trial:
    """One run's store (a SQLite path or a PostgreSQL DSN) and where its children's
    stderr goes."""

    spec: str
    err: Path


def _spawn(trial: Trial, questions: int, delay: float) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "benchmarks.board_torture", "--child", "--db", trial.spec,
         "--questions", str(questions), "--delay", str(delay)],
        cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=trial.err.open("a"),
        text=True, start_new_session=True)


def _finish(trial: Trial, questions: int, delay: float) -> str:
    proc = _spawn(trial, questions, delay)
    out, _ = proc.communicate(timeout=600)
    return out.strip().splitlines()[-1] if out.strip() else f"exit {proc.returncode}"


def _kill_once(trial: Trial, questions: int, delay: float, window: float,
               rng: random.Random) -> bool:
    """Start a child, SIGKILL it at a random instant; whether it was killed (False: it
    finished first)."""
    proc = _spawn(trial, questions, delay)
    assert proc.stdout is not None
    try:
        line = proc.stdout.readline()  # the child is about to drive (imports, store open)
        if line.strip() != DRIVING:
            proc.wait(timeout=60)
            raise RuntimeError(f"the child did not start: exit {proc.returncode}: "
                               f"{trial.err.read_text()[-2000:]}")
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


async def _open(spec: str) -> Blackboard:
    if spec.startswith("postgres"):
        from orchestra.store.postgres import PostgresBlackboard

        return await PostgresBlackboard.open(spec)
    return await SQLiteBlackboard.open(spec)


Board = list[tuple[str, str, str, str]]


@dataclass(frozen=True)
class Snapshot:
    """What the store holds of its one run (``status`` None: no run yet)."""

    status: str | None
    board: Board
    """The run's entries as a multiset: (type, author's role, scope, body), sorted."""
    doubled: list[tuple[str | None, str]]
    unrecorded: int
    dangling: int


async def _snapshot(spec: str) -> Snapshot:
    store = await _open(spec)
    try:
        runs = await store.list_runs()
        if not runs:
            return Snapshot(None, [], [], 0, 0)
        run = runs[0]
        entries = await store.get_entries(run.id)
        tasks = await store.list_tasks(run.id)
        consumed = await store.get_consumptions(run.id)
    finally:
        await store.close()
    board = sorted((e.type, e.author_role, str(e.scope), json.dumps(e.body, sort_keys=True))
                   for e in entries)
    triggered = [t for t in tasks if (t.cause or "").startswith("entry:")]
    per = Counter((t.cause, t.role) for t in triggered)
    task_ids = {t.id for t in tasks}
    consumed_by = {c.task_id for c in consumed}
    return Snapshot(run.status, board, [k for k, n in per.items() if n > 1],
                    sum(1 for t in triggered if t.id not in consumed_by),
                    sum(1 for c in consumed if c.task_id not in task_ids))


def snapshot(spec: str) -> Snapshot:
    return asyncio.run(_snapshot(spec))


def problems(spec: str, reference: Board) -> list[str]:
    """What is wrong with the finished run in ``spec`` (nothing: it passed)."""
    found = []
    got = snapshot(spec)
    if got.status != "completed":
        found.append(f"run ended {got.status}")
    if got.doubled:
        found.append(f"consumptions doubled: {got.doubled[:3]}")
    if got.unrecorded or got.dangling:
        found.append(f"{got.unrecorded} triggered tasks without a consumption, "
                     f"{got.dangling} consumptions without a task")
    if got.board != reference:
        lost = Counter(reference) - Counter(got.board)
        extra = Counter(got.board) - Counter(reference)
        found.append(f"board differs: lost {list(lost)[:3]}, extra {list(extra)[:3]}")
    return found


def _mid_run(spec: str) -> int:
    """1 if the kill left the run part done (entries posted, not completed), else 0."""
    if not spec.startswith("postgres") and not Path(spec).exists():
        return 0
    got = snapshot(spec)
    return int(got.status not in (None, "completed") and bool(got.board))


@dataclass
class Report:
    kills: int = 0
    mid_run: int = 0
    """Kills that left a run part done (entries posted, not completed)."""
    trials: int = 0
    seconds: float = 0.0
    questions: int = 0
    store: str = "sqlite"
    problems: list[str] = field(default_factory=list)


def torture(workdir: Path, *, kills: int, questions: int = 3, delay: float = 0.02,
            window: float = 0.3, seed: int = 48, store: str = "sqlite") -> Report:
    """Kill runs of the example ``kills`` times at random instants; check every run."""
    rng = random.Random(seed)
    started = time.monotonic()
    workdir.mkdir(parents=True, exist_ok=True)
    reference = _trial(workdir, "reference", "sqlite")
    status = _finish(reference, questions, delay)
    if status != "completed":
        raise RuntimeError(f"the uninterrupted run ended {status!r}: "
                           f"{reference.err.read_text()[-2000:]}")
    expected = snapshot(reference.spec).board
    report = Report(questions=questions, store=store)
    while report.kills < kills:
        report.trials += 1
        trial = _trial(workdir, f"trial{report.trials}", store)
        while report.kills < kills and _kill_once(trial, questions, delay, window, rng):
            report.kills += 1
            report.mid_run += _mid_run(trial.spec)
        _finish(trial, questions, delay)  # left alone: resumes (or finds it done) and ends
        report.problems += [f"trial {report.trials}: {p}" for p in problems(trial.spec,
                                                                           expected)]
    report.seconds = round(time.monotonic() - started, 1)
    return report


def _trial(workdir: Path, name: str, store: str) -> Trial:
    """A fresh store for one run: a file, or a new database on the local PostgreSQL."""
    if store == "postgres":
        from benchmarks.postgres.local import shared_server

        spec = shared_server().create_database("torture" + os.urandom(4).hex())
    else:
        spec = str(workdir / f"{name}.db")
    return Trial(spec, workdir / f"{name}.err")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=100)
    parser.add_argument("--questions", type=int, default=40)
    parser.add_argument("--delay", type=float, default=0.02, help="seconds per model call")
    parser.add_argument("--window", type=float, default=0.3,
                        help="kill uniformly within this many seconds of driving")
    parser.add_argument("--seed", type=int, default=48)
    parser.add_argument("--store", choices=["sqlite", "postgres"], default="sqlite",
                        help="the store the runs are tortured on (PostgreSQL: a local server "
                             "the benchmark starts)")
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--db", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(asyncio.run(_child(args.db, args.questions, args.delay)), flush=True)
        return 0
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        report = torture(args.workdir or Path(tmp), kills=args.kills, questions=args.questions,
                         delay=args.delay, window=args.window, seed=args.seed,
                         store=args.store)
    print(json.dumps(asdict(report)))
    return 1 if report.problems else 0


if __name__ == "__main__":
    sys.exit(main())
