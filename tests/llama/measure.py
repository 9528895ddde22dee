"""Measure the stock pipeline on a real model: three kata specs, hidden tests.

Each run is the user's own command, ``orchestra run --spec S --workspace W --model M``,
in a subprocess with a wall-clock limit. Afterwards the workspace's own tests and the
spec's hidden tests (``hidden/hidden_<spec>.py``, never shown to the pipeline) are run
with pytest, and one JSON line per run is appended to ``--out``; ``--table`` prints
the markdown table of a results file.

    python tests/llama/measure.py --model openai-compatible:http://127.0.0.1:8080/v1#local \\
        --runs 3 --out runs.jsonl
    python tests/llama/measure.py --table runs.jsonl
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SPECS = ("fizzbuzz", "roman", "rle")
HIDDEN_TESTS = {"fizzbuzz": 6, "roman": 15, "rle": 7}
"""How many hidden tests each spec has (all count as failed when the module is missing)."""
_COUNTS = re.compile(r"(\d+) (passed|failed|error|errors)")


def pytest_counts(workspace: Path, target: str, timeout: float = 120) -> tuple[int, int]:
    """(passed, total) of ``pytest target`` run in ``workspace`` (0, 0 when none ran)."""
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", target],
        cwd=workspace, capture_output=True, text=True, timeout=timeout, check=False,
        env={**os.environ, "PYTHONPATH": str(workspace)})
    counts = {kind: int(n) for n, kind in _COUNTS.findall(proc.stdout.splitlines()[-1]
                                                            if proc.stdout else "")}
    passed = counts.get("passed", 0)
    return passed, passed + counts.get("failed", 0) + counts.get("error", 0) + counts.get(
        "errors", 0)


async def _store_facts(db: Path) -> dict[str, Any]:
    from orchestra import SQLiteBlackboard

    store = await SQLiteBlackboard.open(db)
    try:
        runs = await store.list_runs()
        if not runs:
            return {}
        run = runs[0]
        tasks = await store.list_tasks(run.id)
        return {"run": run.id, "status": run.status, "error": run.error,
                "tokens": run.tokens_in + run.tokens_out,
                "review_rounds": sum(1 for t in tasks if t.role == "reviewer"),
                "tasks": {t.role: t.status for t in tasks},
                "attempts": sum(t.retries + 1 for t in tasks)}
    finally:
        await store.close()


def measure(spec: str, model: str, limit: float, keep: Path | None) -> dict[str, Any]:
    """One run of the stock pipeline on ``spec``; what it did and how its code tests."""
    root = Path(tempfile.mkdtemp(prefix=f"orchestra-{spec}-"))
    workspace, db = root / "ws", root / "o.db"
    workspace.mkdir()
    started = time.monotonic()
    cmd = [sys.executable, "-m", "orchestra.cli.main", "run", "--spec",
           str(HERE / "specs" / f"{spec}.md"), "--workspace", str(workspace), "--model",
           model, "--db", str(db), "--json"]
    with (root / "run.log").open("w") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            exit_code: int | str = proc.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            exit_code = "killed"
    wall = time.monotonic() - started
    facts = asyncio.run(_store_facts(db)) if db.exists() else {}
    files = sorted(str(p.relative_to(workspace)) for p in workspace.rglob("*")
                   if p.is_file() and "__pycache__" not in p.parts)
    own = pytest_counts(workspace, "tests") if (workspace / "tests").is_dir() else (0, 0)
    hidden_dir = workspace / "hidden_acceptance"
    hidden_dir.mkdir()
    shutil.copy(HERE / "hidden" / f"hidden_{spec}.py", hidden_dir / f"test_hidden_{spec}.py")
    hidden = pytest_counts(workspace, "hidden_acceptance")
    hidden = (hidden[0], HIDDEN_TESTS[spec])  # a module that does not import fails them all
    row = {"spec": spec, "model": model, "exit": exit_code, "wall_s": round(wall),
           **facts, "files": files, "own_tests": list(own), "hidden_tests": list(hidden),
           "dir": str(root)}
    if keep is None:
        shutil.rmtree(root, ignore_errors=True)
    return row


def table(path: Path) -> str:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    out = ["| # | spec | model | exit | wall | tokens | review rounds | files written | "
           "own tests | hidden tests |", "|---|---|---|---|---|---|---|---|---|---|"]
    hidden_passed = hidden_total = 0
    for i, r in enumerate(rows, 1):
        files = ", ".join(f for f in r["files"] if not f.startswith("hidden_")) or "none"
        own, hidden = r["own_tests"], r["hidden_tests"]
        hidden_passed += hidden[0]
        hidden_total += hidden[1]
        label = r.get("label") or r["model"].split("#")[-1].split("?")[0]
        out.append(f"| {i} | {r['spec']} | {label} | "
                   f"{r['exit']} ({r.get('status', '?')}) | {r['wall_s']} s | "
                   f"{r.get('tokens', '?')} | {r.get('review_rounds', '?')} | {files} | "
                   f"{own[0]}/{own[1]} | {hidden[0]}/{hidden[1]} |")
    out.append(f"\nhidden tests passing across {len(rows)} runs: {hidden_passed}/{hidden_total}")
    done = sum(1 for r in rows if r["exit"] != "killed" and r["wall_s"] <= 600
               and f"kata/{r['spec']}.py" in r["files"]
               and f"tests/test_{r['spec']}.py" in r["files"])
    out.append(f"runs that wrote the module and its tests and ended by themselves within "
               f"10 minutes: {done}/{len(rows)}")
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", help="model spec for every role")
    parser.add_argument("--specs", nargs="*", default=list(SPECS), choices=SPECS)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--limit", type=float, default=900, help="seconds per run")
    parser.add_argument("--out", type=Path, help="append one JSON line per run here")
    parser.add_argument("--keep", action="store_true", help="keep each run's directory")
    parser.add_argument("--table", type=Path, help="print the table of a results file")
    parser.add_argument("--label", default="", help="what to call the model in the table "
                                                    "(e.g. 0.5b, 1.5b, gguf-0.5b)")
    args = parser.parse_args()
    if args.table:
        print(table(args.table))
        return 0
    if not args.model or not args.out:
        parser.error("give --model and --out (or --table FILE)")
    for _ in range(args.runs):
        for spec in args.specs:
            row = measure(spec, args.model, args.limit, args.out if args.keep else None)
            row["label"] = args.label
            with args.out.open("a") as f:
                f.write(json.dumps(row) + "\n")
            print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
