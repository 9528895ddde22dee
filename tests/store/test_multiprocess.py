"""Several processes claim from one file: every task is claimed exactly once, no lock errors."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from store_helpers import query

from orchestra.store import NewTask, SQLiteBlackboard
from orchestra.store.sqlite import schema

PROCESSES = 4
TASKS = 10_000
REPO = Path(__file__).resolve().parents[2]


async def create(path: Path) -> str:
    async with await SQLiteBlackboard.open(path) as store:
        run = await store.create_run("p", {}, tasks=[NewTask("coder", {"i": i})
                                                     for i in range(TASKS)])
        return run.id


def run_workers(path: Path, tmp_path: Path) -> list[list[str]]:
    """Start PROCESSES claim workers at once; return the task ids each one claimed."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(REPO), os.environ.get("PYTHONPATH", "")])}
    outs = [tmp_path / f"claimed-{i}.json" for i in range(PROCESSES)]
    workers = [subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("_claim_worker.py")), str(path), f"w{i}",
         str(out)], env=env, stderr=subprocess.PIPE, text=True) for i, out in enumerate(outs)]
    for worker in workers:
        _, stderr = worker.communicate(timeout=180)
        assert worker.returncode == 0, stderr  # "database is locked" would land here
    return [json.loads(out.read_text()) for out in outs]


@pytest.mark.slow
def test_processes_creating_one_new_file_at_once_migrate_it_once(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    assert run_workers(path, tmp_path) == [[]] * PROCESSES
    assert query(path, "SELECT version FROM orchestra_schema") == [(schema.LATEST_VERSION,)]


@pytest.mark.slow
def test_processes_claim_every_task_exactly_once(tmp_path: Path) -> None:
    path = tmp_path / "board.db"
    run_id = asyncio.run(create(path))
    claimed = run_workers(path, tmp_path)
    all_ids = [task_id for ids in claimed for task_id in ids]
    assert len(all_ids) == len(set(all_ids)) == TASKS
    assert all(ids for ids in claimed), "every process got work"
    assert query(path, "SELECT status, attempt, COUNT(*) FROM tasks GROUP BY status, attempt") == [
        ("completed", 1, TASKS)]
    claims = Counter(json.loads(data)["task"] for (data,) in query(
        path, "SELECT data FROM events WHERE run_id = ? AND kind = 'task.claimed'", run_id))
    assert set(claims.values()) == {1} and len(claims) == TASKS
    seqs = [seq for (seq,) in query(path, "SELECT seq FROM events WHERE run_id = ? ORDER BY seq",
                                    run_id)]
    assert seqs == list(range(1, 1 + 1 + 3 * TASKS))  # created, claimed, completed per task
