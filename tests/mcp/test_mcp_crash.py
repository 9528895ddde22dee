"""kill -9 of a worker in the middle of MCP calls, then resume in a new process: every
side effect happens exactly once, or its task waits in doubt for a person (never twice);
an idempotent call in flight is simply sent again; the server dies with the worker."""

from __future__ import annotations

import asyncio
import os
import random
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from mcp_helpers import lines

from orchestra import SQLiteBlackboard

CHILD = Path(__file__).with_name("mcp_child.py")
ROOT = Path(__file__).parents[2]
TURNS = 4


def _spawn(mode: str, work: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{CHILD.parent}"}
    return subprocess.Popen([sys.executable, str(CHILD), mode, str(work / "o.db"), str(work)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


async def _until(check: Callable[[], bool], what: str, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.005)


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    with open(f"/proc/{pid}/stat") as f:  # a zombie nobody reaped yet is dead too
        return f.read().split(")")[-1].split()[0] == "Z"


async def _status_and_pending(db: Path) -> tuple[str, list[object]]:
    store = await SQLiteBlackboard.open(db)
    try:
        run = await store.get_run("crash")
        return run.status, list(await store.list_approvals("crash", status="pending"))
    finally:
        await store.close()


async def _decide(db: Path, approval_id: str, approved: bool) -> None:
    store = await SQLiteBlackboard.open(db)
    try:
        await store.decide_approval(approval_id, approved=approved, by="careful person",
                                    reason=None if approved else "it already happened")
    finally:
        await store.close()


async def _trial(work: Path, kill_at: str, delay: float) -> dict[str, int]:
    """One run killed at ``kill_at`` (``begin``: a call sent, its effect not yet made;
    ``effect``: made, its answer not yet recorded; ``random``: ``delay`` s after the first
    call went out), then resumed until done, deciding in-doubt calls as a careful person
    would: look for the call's idempotency key in the outside system."""
    work.mkdir()
    begun, effects_log = work / "effects.begun", work / "effects.log"
    child = _spawn("run", work)
    if kill_at == "random":
        await _until(lambda: bool(lines(begun)), "the first call")
        await asyncio.sleep(delay)
    else:
        target = begun if kill_at == "begin" else effects_log
        await _until(lambda: len(lines(target)) >= 2, f"the second {kill_at}")
    child.kill()
    child.wait(10)
    server = int((work / "server.pid").read_text())
    await _until(lambda: _gone(server), f"the MCP server (pid {server}) to die with its worker")
    seen = {"in_doubt": 0, "approved": 0, "denied": 0}
    for _ in range(2 * TURNS):
        out, err = _spawn("resume", work).communicate(timeout=60)
        status, pending = await _status_and_pending(work / "o.db")
        if status == "completed":
            break
        assert status == "waiting", (status, out, err)
        for approval in pending:
            assert approval.tool == "append [in doubt]", approval  # type: ignore[attr-defined]
            args = approval.arguments  # type: ignore[attr-defined]
            assert args["server"] == "effects" and args["tool"] == "append"
            happened = any(ln.split()[0] == args["idempotency_key"] for ln in lines(effects_log))
            seen["in_doubt"] += 1
            seen["denied" if happened else "approved"] += 1
            await _decide(work / "o.db", approval.id, not happened)  # type: ignore[attr-defined]
    else:
        raise AssertionError(f"{work}: the run did not complete")
    keys = [ln.split()[0] for ln in lines(effects_log)]
    assert len(keys) == len(set(keys)), f"an effect happened twice: {lines(effects_log)}"
    assert sorted(ln.split()[1] for ln in lines(effects_log)) == [
        f"e{k}" for k in range(1, TURNS + 1)]
    assert sorted((work).glob("put-k*")) == [work / f"put-k{k}" for k in range(1, TURNS + 1)]
    return seen


@pytest.mark.slow
async def test_kill_9_mid_call_never_sends_a_side_effect_twice(tmp_path: Path) -> None:
    rng = random.Random(39)
    plan = [("begin", 0.0), ("effect", 0.0)] + [("random", rng.uniform(0, 1.0))
                                                for _ in range(3)]
    totals = {"trials": 0, "in_doubt": 0, "approved": 0, "denied": 0}
    for i, (kill_at, delay) in enumerate(plan):
        seen = await _trial(tmp_path / f"trial{i}", kill_at, delay)
        if kill_at == "begin":
            assert seen == {"in_doubt": 1, "approved": 1, "denied": 0}
        if kill_at == "effect":
            assert seen == {"in_doubt": 1, "approved": 0, "denied": 1}
        totals["trials"] += 1
        totals.update({k: totals[k] + v for k, v in seen.items()})
    print(f"\nmcp kill -9 trials: {totals}")  # the note quotes these
