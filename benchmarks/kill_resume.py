"""kill -9 the stock pipeline mid-project with a real model, resume it, and check the
journal: no model call or tool step completed before a kill runs again.

    python -m benchmarks.kill_resume --katas benchmarks/katas_project --spec tally \
        --model 'openai-compatible:http://127.0.0.1:8080/v1#local' --kill-after 2 4

``orchestra run`` starts as a user types it; each ``--kill-after K`` kills the process
group (SIGKILL) once K coder tasks have completed, then ``orchestra resume RUN`` goes on
in a new process. At each kill the journal's steps are copied; at the end every step
that was completed then must still be completed, with the same attempt count (a
replayed step is read from the journal, not executed again), and the run must have
ended by itself. One JSON line per trial: kills, steps re-executed, model calls, the
modules written and the hidden tests passed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.katas import load_kata, score_hidden, spec_paths

StepKey = tuple[str, int, int]


def _query(db: Path, sql: str) -> list[tuple[Any, ...]]:
    """A read-only look at the run's store (the running process keeps writing it)."""
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
            return conn.execute(sql).fetchall()
    except sqlite3.OperationalError:  # not created yet, or busy: look again
        return []


def _steps(db: Path) -> dict[StepKey, tuple[str, str, int]]:
    rows = _query(db, "SELECT task_id, retry, step, kind, status, attempts FROM steps")
    return {(t, r, s): (kind, status, attempts) for t, r, s, kind, status, attempts in rows}


def _coders_done(db: Path) -> int:
    rows = _query(db, "SELECT count(*) FROM tasks WHERE role = 'coder' AND status = 'completed'")
    return int(rows[0][0]) if rows else 0


def _run_until(cmd: list[str], log: Path, db: Path, kill_at: int | None,
               limit: float) -> str:
    """Run ``cmd``; SIGKILL its group once ``kill_at`` coder tasks completed. Its fate."""
    with log.open("a") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
        ends = time.monotonic() + limit
        while proc.poll() is None:
            if kill_at is not None and _coders_done(db) >= kill_at:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                return "killed"
            if time.monotonic() > ends:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                return "limit"
            time.sleep(0.5)
        return f"exit {proc.returncode}"


def trial(katas: Path, spec: str, model: str, kills: list[int], root: Path,
          limit: float) -> dict[str, Any]:
    kata = load_kata(spec, katas)
    workspace, db = root / "ws", root / "o.db"
    workspace.mkdir(parents=True)
    shutil.copy(kata.spec, root / kata.spec.name)
    cli = [sys.executable, "-m", "orchestra.cli.main"]
    fates, at_kill = [], []
    started = time.monotonic()
    cmd = [*cli, "run", "--spec", str(root / kata.spec.name), "--workspace", str(workspace),
           "--model", model, "--db", str(db)]
    for k in [*kills, None]:
        fate = _run_until(cmd, root / "run.log", db, k, limit)
        fates.append(fate)
        if fate == "killed":
            at_kill.append({key: v for key, v in _steps(db).items() if v[1] == "completed"})
        elif fate == "limit":
            break
        runs = _query(db, "SELECT id FROM runs")
        if not runs:
            break
        cmd = [*cli, "resume", str(runs[0][0]), "--db", str(db)]
        if not fate.startswith("killed"):
            break
    final = _steps(db)
    again = sorted({f"{key[0]}/{key[1]}/{key[2]} {v[0]}" for snap in at_kill
                    for key, v in snap.items()
                    if final.get(key, ("", "missing", 0))[1:] != v[1:]})
    status = _query(db, "SELECT status FROM runs")
    wanted = [p for p in spec_paths(kata.spec.read_text())
              if not (p.startswith("tests/") or Path(p).name.startswith("test_"))]
    packages = {str(Path(p).parent) for p in wanted if "/" in p}
    # a bare `__init__.py` in the prose ("a `tally/` directory with an `__init__.py`") is
    # the package's: written when each package directory holds one
    written = [p for p in wanted if (workspace / p).is_file() or (
        p == "__init__.py" and packages and all((workspace / d / p).is_file()
                                                 for d in packages))]
    passed, total = score_hidden(kata, workspace)
    return {"spec": spec, "model": model, "kills": kills, "fates": fates,
            "status": status[0][0] if status else None,
            "ended_by_itself": bool(fates) and fates[-1] == "exit 0",
            "completed_steps_at_kills": [len(s) for s in at_kill],
            "completed_steps_run_again": again,
            "model_calls": sum(1 for v in final.values() if v[0] == "model"),
            "modules_written": f"{len(written)}/{len(wanted)}", "hidden": [passed, total],
            "wall_s": round(time.monotonic() - started, 1), "dir": str(root)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--katas", type=Path, default=Path("benchmarks/katas_project"))
    parser.add_argument("--spec", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--kill-after", type=int, nargs="+", default=[2],
                        help="kill once this many coder tasks completed (one kill each)")
    parser.add_argument("--limit", type=float, default=3600,
                        help="seconds each process may take")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix=f"kill-{args.spec}-"))
    row = trial(args.katas, args.spec, args.model, sorted(args.kill_after), root, args.limit)
    line = json.dumps(row)
    print(line)
    if args.out:
        with args.out.open("a") as out:
            out.write(line + "\n")
    return 0 if row["ended_by_itself"] and not row["completed_steps_run_again"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
