"""The pipeline side of the quality benchmark: ``orchestra run`` exactly as a user types it.

The run is a subprocess in its own process group with default settings; at the
wall-clock limit the whole group is killed and the row says the run did not end by
itself. What it cost is read afterwards from its store: tokens, model calls (the
journal's model steps, every task and retry) and, where the journal records them, the
prompt tokens the server evaluated and reused from its cache.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.katas import Kata
from orchestra import SQLiteBlackboard
from orchestra.types import Step


def _cache_figures(steps: list[Step]) -> dict[str, int | None]:
    """Prompt tokens the server evaluated and reused from its cache, over the run's model
    steps: each step's record keeps ``usage: [input, output, cached input, ...]`` (cached
    input is llama.cpp's ``timings.cache_n``). None (shown n/a) when no step has them."""
    evaluated = reused = 0
    counted = False
    for step in steps:
        record = step.output if isinstance(step.output, dict) else {}
        usage = record.get("usage")
        if isinstance(usage, list) and len(usage) >= 3 and all(
                isinstance(n, int) for n in usage[:3]):
            counted = True
            evaluated += usage[0] - usage[2]
            reused += usage[2]
    return {"prompt_evaluated": evaluated if counted else None,
            "prompt_reused": reused if counted else None}


async def store_facts(db: Path) -> dict[str, Any]:
    """What the run's store says it did (``{}`` when no run was created)."""
    store = await SQLiteBlackboard.open(db)
    try:
        runs = await store.list_runs()
        if not runs:
            return {}
        run = runs[0]
        tasks = await store.list_tasks(run.id)
        steps = [s for t in tasks for retry in range(t.retries + 1)
                 for s in await store.get_steps(t.id, retry) if s.kind == "model"]
        return {"run": run.id, "status": run.status, "error": run.error,
                "tokens_in": run.tokens_in, "tokens_out": run.tokens_out,
                "model_calls": len(steps), "tasks": {t.role: t.status for t in tasks},
                **_cache_figures(steps)}
    finally:
        await store.close()


def run_orchestra(kata: Kata, model: str, root: Path, *, limit: float) -> dict[str, Any]:
    """``orchestra run`` on a copy of the kata's spec into ``root/ws``; what happened."""
    workspace, db, spec = root / "ws", root / "o.db", root / kata.spec.name
    workspace.mkdir(parents=True, exist_ok=True)
    shutil.copy(kata.spec, spec)  # the run sees the spec alone, nothing beside it
    cmd = [sys.executable, "-m", "orchestra.cli.main", "run", "--spec", str(spec),
           "--workspace", str(workspace), "--model", model, "--db", str(db)]
    started = time.monotonic()
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
    facts = asyncio.run(store_facts(db)) if db.exists() else {}
    files = sorted(str(p.relative_to(workspace)) for p in workspace.rglob("*.py")
                   if "__pycache__" not in p.parts)
    return {"side": "orchestra", "exit": exit_code, "ended_by_itself": exit_code != "killed",
            "wall_s": round(wall, 1), "limit_s": limit, "tokens_in": 0, "tokens_out": 0,
            "model_calls": 0,
            "prompt_evaluated": None, "prompt_reused": None, **facts, "files": files}
