"""S4 crash resume, side-neutral: the parent that kills and resumes, and the plumbing
of the child processes.

A trial, for one side module ``M`` (e.g. ``benchmarks.sides.langgraph_side``):

1. ``python -m M s4-child --phase run ...`` runs one pipeline (L = 50 ms) on a fresh
   DB and is SIGKILLed around call 9: *return* (the child kills itself inside call 9
   right after the reply is produced), *next* (it kills itself when call 10 is entered,
   before the call is issued) or *external* (the parent kills it as soon as the call
   log shows call 9 returned).
2. ``python -m M s4-child --phase resume ...`` resumes the same run and must finish
   with the correct final state.

The fake model of each process appends to its own call log (flush + fsync per line);
duplicates = calls issued in both processes - 17. Resume latency is split with one
system-wide monotonic clock: interpreter start (spawn -> first line of ``M``), imports
(-> ``M``'s imports done), framework (-> first model call of the resume).

The side module's ``__main__`` block calls :func:`child_main` with an async function
that runs (phase ``run``) or resumes (phase ``resume``) the pipeline on ``args.db``
with the given model and checks the final state.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from benchmarks.measure import S4_LATENCY
from benchmarks.workload import CALLS_PER_PIPELINE, FakeModel

KillPoint = Literal["return", "next", "external"]
KILL_POINTS: tuple[KillPoint, ...] = ("return", "next", "external")
KILL_AT = 9
REPO_ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class ChildArgs:
    phase: Literal["run", "resume"]
    db: Path
    durability: str
    kill_point: KillPoint
    kill_at: int
    latency: float
    log: Path
    result: Path


ChildBody = Callable[[ChildArgs, FakeModel], Coroutine[Any, Any, dict[str, str]]]
"""Runs or resumes the pipeline, checks the final state, returns the pragmas in effect
(``journal_mode``, ``synchronous``)."""


def _kill_self(_: int) -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def child_model(args: ChildArgs) -> FakeModel:
    """The fake model of a child, with the in-process kill point armed in phase run."""
    model = FakeModel(latency=args.latency, call_log=args.log)
    if args.phase == "run" and args.kill_point == "return":
        model.on_return = lambda n: _kill_self(n) if n == args.kill_at else None
    elif args.phase == "run" and args.kill_point == "next":
        model.on_enter = lambda n: _kill_self(n) if n == args.kill_at + 1 else None
    return model


def child_main(
    argv: Sequence[str], body: ChildBody, t_module_start: float, t_imported: float
) -> None:
    """Entry of ``python -m <side> s4-child ...``: run ``body`` and write the timings."""
    p = argparse.ArgumentParser(prog="s4-child")
    p.add_argument("--phase", choices=["run", "resume"], required=True)
    p.add_argument("--db", type=Path, required=True)
    p.add_argument("--durability", required=True)
    p.add_argument("--kill-point", choices=KILL_POINTS, required=True)
    p.add_argument("--kill-at", type=int, default=KILL_AT)
    p.add_argument("--latency", type=float, default=S4_LATENCY)
    p.add_argument("--log", type=Path, required=True)
    p.add_argument("--result", type=Path, required=True)
    ns = p.parse_args(argv)
    args = ChildArgs(**vars(ns))
    model = child_model(args)
    pragmas = asyncio.run(body(args, model))
    result = {
        **pragmas,
        "phase": args.phase,
        "t_module_start": t_module_start,
        "t_imported": t_imported,
        "t_first_call": model.entered_at[0] if model.entered_at else None,
        "t_done": time.monotonic(),
        "calls": model.calls,
    }
    args.result.write_text(json.dumps(result))


def _issued(log: Path) -> int:
    if not log.exists():
        return 0
    return sum(1 for line in log.read_text().splitlines() if line.startswith("enter "))


def _spawn(
    side_module: str, phase: str, paths: dict[str, Path], kill_point: str, durability: str
) -> subprocess.Popen[bytes]:
    cmd = [
        sys.executable, "-m", side_module, "s4-child", "--phase", phase,
        "--db", str(paths["db"]), "--durability", durability, "--kill-point", kill_point,
        "--log", str(paths[f"log_{phase}"]), "--result", str(paths[f"result_{phase}"]),
    ]  # fmt: skip
    return subprocess.Popen(cmd, cwd=REPO_ROOT, stderr=subprocess.PIPE)


def _wait_for_return(log: Path, n: int, proc: subprocess.Popen[bytes], timeout: float) -> None:
    needle = f"return {n} "
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if log.exists() and needle in log.read_text():
            return
        if proc.poll() is not None:
            return
        time.sleep(0.0005)
    raise TimeoutError(f"call {n} did not return within {timeout} s")


def _check_exit(proc: subprocess.Popen[bytes], want: int, what: str, timeout: float) -> None:
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise
    if proc.returncode != want:
        tail = err.decode(errors="replace")[-2000:]
        raise RuntimeError(f"{what} exited with {proc.returncode}, want {want}:\n{tail}")


def crash_trial(
    side_module: str, kill_point: KillPoint, durability: str, workdir: Path,
    *, timeout: float = 120.0,
) -> dict[str, Any]:  # fmt: skip
    """One S4 trial in a fresh ``workdir``; returns duplicates and the resume timings."""
    workdir.mkdir(parents=True, exist_ok=True)
    paths = {
        "db": workdir / "s4.sqlite",
        "log_run": workdir / "calls-run.log",
        "log_resume": workdir / "calls-resume.log",
        "result_run": workdir / "result-run.json",
        "result_resume": workdir / "result-resume.json",
    }
    for path in workdir.iterdir():
        path.unlink()
    child = _spawn(side_module, "run", paths, kill_point, durability)
    if kill_point == "external":
        _wait_for_return(paths["log_run"], KILL_AT, child, timeout)
        if child.poll() is None:
            child.send_signal(signal.SIGKILL)
    _check_exit(child, -signal.SIGKILL, f"{side_module} run child", timeout)

    t_spawn = time.monotonic()
    resume = _spawn(side_module, "resume", paths, kill_point, durability)
    _check_exit(resume, 0, f"{side_module} resume child", timeout)
    timing = json.loads(paths["result_resume"].read_text())
    calls_run, calls_resume = _issued(paths["log_run"]), _issued(paths["log_resume"])
    if timing["t_first_call"] is None:
        raise RuntimeError("the resume made no model call: the kill came too late")
    return {
        "kill_point": kill_point,
        "duplicates": calls_run + calls_resume - CALLS_PER_PIPELINE,
        "calls_killed_process": calls_run,
        "calls_resume_process": calls_resume,
        "interpreter_s": timing["t_module_start"] - t_spawn,
        "imports_s": timing["t_imported"] - timing["t_module_start"],
        "framework_s": timing["t_first_call"] - timing["t_imported"],
        "resume_total_s": timing["t_done"] - t_spawn,
        "journal_mode": timing.get("journal_mode", "-"),
        "synchronous": timing.get("synchronous", "-"),
    }
