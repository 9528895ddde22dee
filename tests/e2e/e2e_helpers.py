"""Shared helpers of the end-to-end tests: the CLI in a child process, the store read
with plain ``sqlite3`` (read-only, as an outside observer), polling, snapshots."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

REPO = Path(__file__).resolve().parents[2]
DEMO_MODEL = "python:agents.demo.director:demo_model"  # as `orchestra demo` records it
CLI_TIMEOUT = 90.0

T = TypeVar("T")


def child_env() -> dict[str, str]:
    """The environment of every child: the repo importable (``tests.e2e.*`` pipelines),
    no model configured from the developer's shell, default log level."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("ORCHESTRA_MODEL", "ORCHESTRA_LOG", "PYTHONPATH")}
    env["PYTHONPATH"] = str(REPO)
    return env


def cli_argv(*args: str | Path) -> list[str]:
    return [sys.executable, "-m", "orchestra.cli.main", *map(str, args)]


@dataclass
class Result:
    code: int
    stdout: str
    stderr: str

    def __str__(self) -> str:  # shown by a failing assert
        return f"exit {self.code}\n--- stdout\n{self.stdout[-3000:]}\n--- stderr\n" \
               f"{self.stderr[-3000:]}"


def cli(*args: str | Path, cwd: Path | None = None, timeout: float = CLI_TIMEOUT) -> Result:
    """Run ``orchestra ARGS`` to the end in a child process."""
    proc = subprocess.run(cli_argv(*args), cwd=cwd, env=child_env(), capture_output=True,
                          text=True, timeout=timeout)
    return Result(proc.returncode, proc.stdout, proc.stderr)


def cli_many(*argvs: Sequence[str | Path], workers: int = 4) -> list[Result]:
    """Run independent CLI calls at once (start-up dominates each); results in order."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(lambda argv: cli(*argv), argvs))


def spawn(*args: str | Path, log: Path, cwd: Path | None = None) -> subprocess.Popen[bytes]:
    """Start ``orchestra ARGS`` in its own process group; output goes to ``log``(.out/.err)."""
    out = open(log.with_suffix(".out"), "wb")
    err = open(log.with_suffix(".err"), "wb")
    try:
        return subprocess.Popen(cli_argv(*args), cwd=cwd, env=child_env(), stdout=out,
                                stderr=err, start_new_session=True)
    finally:
        out.close()
        err.close()


def logs(log: Path) -> str:
    parts = []
    for suffix in (".out", ".err"):
        p = log.with_suffix(suffix)
        if p.exists():
            parts.append(f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}")
    return "\n".join(parts)


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the child and everything it started (pytest runs of the agents): a power
    cut of the whole process tree, not a clean stop."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


def interrupt(proc: subprocess.Popen[bytes], timeout: float = 30) -> int:
    """Ctrl-C the child (SIGINT) and return its exit code once it stopped; a child still
    running after ``timeout`` is killed with its whole group."""
    try:
        proc.send_signal(signal.SIGINT)
        return proc.wait(timeout=timeout)
    finally:
        if proc.poll() is None:
            kill_group(proc)


# -- reading the store from outside ---------------------------------------------------
def connect_ro(db: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    conn.execute("PRAGMA query_only = ON")
    return conn


def query(db: Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    with contextlib.closing(connect_ro(db)) as conn:
        return conn.execute(sql, params).fetchall()


def poll(check: Callable[[], T | None], *, what: str, timeout: float = 60.0,
         proc: subprocess.Popen[bytes] | None = None, interval: float = 0.005) -> T:
    """Call ``check`` until it returns something truthy; fail if ``proc`` ends first."""
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(sqlite3.Error):
            value = check()
            if value:
                return value
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the child exited ({proc.returncode}) before: {what}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for: {what}")
        time.sleep(interval)


class StoreWatch:
    """A read-only connection kept open while polling a store a child is writing.

    The file may not exist yet when polling starts: connecting is retried."""

    def __init__(self, db: Path) -> None:
        self.db = db
        self._conn: sqlite3.Connection | None = None

    def rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        if self._conn is None:
            if not self.db.exists():
                return []
            conn = connect_ro(self.db)
            try:
                conn.execute("SELECT 1 FROM events LIMIT 1").fetchall()
            except sqlite3.Error:
                conn.close()
                raise
            self._conn = conn
        return self._conn.execute(sql, params).fetchall()

    def wait(self, sql: str, params: tuple[Any, ...] = (), *, what: str,
             proc: subprocess.Popen[bytes] | None = None,
             timeout: float = 60.0) -> list[tuple[Any, ...]]:
        return poll(lambda: self.rows(sql, params), what=what, proc=proc, timeout=timeout)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> StoreWatch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def only_run_id(db: Path) -> str:
    rows = query(db, "SELECT id FROM runs")
    assert len(rows) == 1, rows
    return str(rows[0][0])


def event_seqs_gap_free(db: Path, run_id: str) -> None:
    seqs = [r[0] for r in query(db, "SELECT seq FROM events WHERE run_id = ? ORDER BY seq",
                                (run_id,))]
    last = query(db, "SELECT last_seq FROM runs WHERE id = ?", (run_id,))[0][0]
    assert seqs == list(range(1, len(seqs) + 1)), "event seqs have gaps or duplicates"
    assert seqs[-1] == last, f"runs.last_seq {last} != last event {seqs[-1]}"


def events(db: Path, run_id: str) -> list[tuple[int, str, Any]]:
    return [(seq, kind, json.loads(data)) for seq, kind, data in query(
        db, "SELECT seq, kind, data FROM events WHERE run_id = ? ORDER BY seq", (run_id,))]


# -- snapshots compared across runs ---------------------------------------------------
def workspace_files(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (relative path -> bytes); caches included, on purpose."""
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _canon(text: str | None) -> str:
    return "null" if text is None else json.dumps(json.loads(text), sort_keys=True)


def _canon_payload(text: str) -> str:
    """A handoff's payload without ``worked`` and ``began``, the run's working seconds
    when it (or its round's coder task) was posted (measurements of time, like timestamps)."""
    payload = json.loads(text)
    if isinstance(payload, dict):
        payload.pop("worked", None)
        payload.pop("began", None)
    return json.dumps(payload, sort_keys=True)


def _role(agent_id: str) -> str:
    return agent_id.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class Board:
    """A run's board without ids and timestamps."""

    plans: list[str]
    handoffs: list[tuple[str, str, str]]
    notes: list[tuple[str, tuple[str, ...], str]]
    tasks: Counter[tuple[str, str, str]]


def board(db: Path, run_id: str) -> Board:
    plans = [_canon(b) for (b,) in query(
        db, "SELECT body FROM plans WHERE run_id = ? ORDER BY version", (run_id,))]
    handoffs = sorted((_role(f), to, _canon_payload(p)) for f, to, p in query(
        db, "SELECT from_agent, to_role, payload FROM handoffs WHERE run_id = ?", (run_id,)))
    notes = sorted((_role(a), tuple(json.loads(t)), b) for a, t, b in query(
        db, "SELECT author, tags, body FROM notes WHERE run_id = ?", (run_id,)))
    tasks = Counter((role, status, _canon(result)) for role, status, result in query(
        db, "SELECT role, status, result FROM tasks WHERE run_id = ?", (run_id,)))
    return Board(plans, handoffs, notes, tasks)


def step_rows(db: Path, run_id: str) -> list[tuple[str, int, int, str, str, int]]:
    """(task, retry, step, name, status, attempts) of every journaled step of the run."""
    return query(db, "SELECT s.task_id, s.retry, s.step, s.name, s.status, s.attempts "
                     "FROM steps s JOIN tasks t ON t.id = s.task_id WHERE t.run_id = ? "
                     "ORDER BY s.task_id, s.retry, s.step", (run_id,))


def show(db: Path, run_id: str) -> dict[str, Any]:
    res = cli("show", run_id, "--db", db, "--json")
    assert res.code == 0, res
    data: dict[str, Any] = json.loads(res.stdout)
    return data


def demo_input(workspace: Path) -> dict[str, Any]:
    """The run input ``orchestra demo`` builds (see ``cmd_demo``)."""
    from agents.demo import run_input

    return {**run_input(str(workspace)), "model": DEMO_MODEL}


def tree(directory: Path) -> dict[str, bytes | None]:
    """Every file (-> bytes) and directory (-> None) under ``directory``: what
    "nothing was written" is checked against."""
    return {p.relative_to(directory).as_posix(): None if p.is_dir() else p.read_bytes()
            for p in sorted(directory.rglob("*"))}


@dataclass(frozen=True)
class Reference:
    """An uninterrupted ``orchestra demo``: its store, workspace, output and snapshots."""

    db: Path
    workspace: Path
    run_id: str
    result: Result
    files: dict[str, bytes]
    board: Board
