"""Replay after a real crash: SIGKILL a child mid-task, resume in a new process."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from orchestra import SQLiteBlackboard

CHILD = Path(__file__).with_name("crash_child.py")
ROOT = Path(__file__).parents[2]


def _spawn(mode: str, db: Path, workdir: Path, protocol: str = "native"
           ) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, str(CHILD), mode, str(db), str(workdir), protocol],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


async def _final(db: Path) -> tuple[str, object, dict[str, int]]:
    store = await SQLiteBlackboard.open(db)
    run = await store.get_run("crashrun")
    (task,) = await store.list_tasks("crashrun")
    counts = await store.step_counts("crashrun")
    await store.close()
    return run.status, task.result, counts


@pytest.mark.slow
@pytest.mark.parametrize("kill_after_calls,kill_after_effects,protocol", [
    (1, 0, "native"), (3, 2, "native"), (5, 4, "native"), (2, 2, "native"),
    # tool calls made through the JSON tool protocol journal and replay the same way
    (3, 2, "json"), (2, 2, "json")])
async def test_sigkill_mid_task_then_resume(tmp_path: Path, kill_after_calls: int,
                                            kill_after_effects: int, protocol: str) -> None:
    # the uninterrupted reference
    ref = tmp_path / "ref"
    ref.mkdir()
    child = _spawn("run", ref / "o.db", ref, protocol)
    assert child.wait(60) == 0, child.stderr.read() if child.stderr else ""
    ref_status, ref_result, _ = await _final(ref / "o.db")
    ref_calls = len(_lines(ref / "calls.log"))

    work = tmp_path / "crash"
    work.mkdir()
    child = _spawn("run", work / "o.db", work, protocol)
    deadline = time.monotonic() + 30
    while (len(_lines(work / "calls.log")) < kill_after_calls
           or len(_lines(work / "effects.log")) < kill_after_effects):
        assert child.poll() is None, "child finished before the kill point"
        assert time.monotonic() < deadline
        await asyncio.sleep(0.002)
    child.send_signal(signal.SIGKILL)
    child.wait(10)
    calls_before = len(_lines(work / "calls.log"))
    effects_before = _lines(work / "effects.log")

    child = _spawn("resume", work / "o.db", work, protocol)
    assert child.wait(60) == 0, child.stderr.read() if child.stderr else ""
    status, result, counts = await _final(work / "o.db")
    assert (status, result) == (ref_status, ref_result) == ("completed", {"total": 150})

    calls_after = len(_lines(work / "calls.log")) - calls_before
    effects = _lines(work / "effects.log")
    # completed model calls are not issued again; at most the in-flight one is
    assert calls_before + calls_after <= ref_calls + 1
    # each side effect ran once, except possibly the one in flight at the kill
    keys = [e.split()[0] for e in effects]
    assert len(keys) - len(set(keys)) <= 1
    assert len(set(keys)) == 5
    assert effects[:len(effects_before)] == effects_before
    assert counts["reissued"] <= 1
