"""A writer SIGKILLed mid-transaction leaves a clean, consistent file: every committed
step has its event and messages, and nothing exists without the change it reports."""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from orchestra.store import SQLiteBlackboard

REPO = Path(__file__).resolve().parents[2]
ROUNDS = 5


def kill_mid_write(path: Path, delay: float) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(REPO), os.environ.get("PYTHONPATH", "")])}
    child = subprocess.Popen([sys.executable, str(Path(__file__).with_name("_crash_worker.py")),
                              str(path)], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    assert child.stdout is not None
    line = child.stdout.readline()
    assert line == "ready\n", (line, child.stderr.read() if child.stderr else "")
    time.sleep(delay)
    assert child.poll() is None, "the writer died by itself"
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=10)
    assert child.returncode == -signal.SIGKILL


def check_consistent(path: Path) -> int:
    """Assert the invariants with plain sqlite3; return the number of completed steps."""
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        conn.execute("INSERT INTO notes_fts (notes_fts) VALUES ('integrity-check')")
        steps = {(task, step): status for task, step, status in conn.execute(
            "SELECT task_id, step, status FROM steps")}
        # model steps start without an event (frequent, effect-free); the others have one
        effectful = {(task, step) for task, step in conn.execute(
            "SELECT task_id, step FROM steps WHERE kind != 'model'")}
        events: dict[str, set[tuple[str, int]]] = {"step.started": set(), "step.completed": set()}
        for run_id, in conn.execute("SELECT id FROM runs"):
            seqs = [s for s, in conn.execute(
                "SELECT seq FROM events WHERE run_id = ? ORDER BY seq", (run_id,))]
            assert seqs == list(range(1, len(seqs) + 1))
        for kind, data in conn.execute("SELECT kind, data FROM events WHERE kind LIKE 'step.%'"):
            payload = json.loads(data)
            events[kind].add((payload["task"], payload["step"]))
        completed = {key for key, status in steps.items() if status == "completed"}
        assert events["step.completed"] == completed  # each committed step has its event, and
        assert events["step.started"] == effectful  # no event reports a change that is absent
        messages: dict[tuple[str, int], set[str]] = {}
        for task_id, content in conn.execute("SELECT task_id, content FROM messages"):
            task, step, part = content.split(":")
            assert task == task_id
            messages.setdefault((task, int(step)), set()).add(part)
        assert set(messages) == completed
        assert all(parts == {"q", "a"} for parts in messages.values())
        notes = {body.split(" ")[1] for body, in conn.execute("SELECT body FROM notes")}
        assert notes == {f"{t}:{s}" for t, s in completed if s % 5 == 0}
        totals = conn.execute("SELECT SUM(steps), SUM(tokens_in) FROM runs").fetchone()
        assert totals == (len(completed), 3 * len(completed))
        return len(completed)
    finally:
        conn.close()


async def reopen_and_write(path: Path) -> None:
    async with await SQLiteBlackboard.open(path) as store:
        run = await store.create_run("after-crash", {})
        assert (await store.get_run(run.id)).status == "pending"


@pytest.mark.slow
def test_sigkill_mid_transaction_leaves_a_consistent_store(tmp_path: Path) -> None:
    path = tmp_path / "board.db"
    rng = random.Random()
    completed = 0
    for _ in range(ROUNDS):
        delay = rng.uniform(0.05, 0.4)
        kill_mid_write(path, delay)
        now_completed = check_consistent(path)
        assert now_completed > completed, f"no progress before the kill at {delay:.3f}s"
        completed = now_completed
        asyncio.run(reopen_and_write(path))
