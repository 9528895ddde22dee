"""Run pytest for real inside a workspace and report the result as data: a claim that
"the tests pass" is worth something only if they ran. pytest runs in a sandboxed child
(:mod:`agents.sandbox`) killed whole, with all it spawned, when the deadline passes.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
import time
from functools import partial
from pathlib import Path
from typing import ClassVar

from pydantic import BaseModel, ConfigDict

from agents.sandbox import Sandbox, detect_sandbox, kill_tree, new_marker
from agents.workspace import Workspace, WorkspaceError

__all__ = ["TestReport", "run_pytest"]

# Config files pytest looks for, in its own order of precedence.
_CONFIG_FILES = ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")
# Keep this much of the end of the output for parsing, whatever max_output is.
_PARSE_TAIL_BYTES = 4096
_READ_CHUNK = 65536
_SUMMARY_LINE = re.compile(r"\bin \d+(?:\.\d+)?s\b")
_SUMMARY_COUNT = re.compile(r"(\d+) (passed|failed|errors?)\b")
# After the kill, how long to wait for the pipe to drain before giving up on it.
_DRAIN_TIMEOUT_S = 2.0
_COLUMNS = 80


class TestReport(BaseModel):
    """What one pytest run did: the verdict, the counts, and the (trimmed) output."""

    __test__: ClassVar[bool] = False  # not a pytest test class, despite the name
    model_config = ConfigDict(frozen=True)

    passed: bool
    """True only if pytest exited 0: tests were collected and none failed or errored."""
    exit_code: int
    """pytest's exit code; negative (the signal number) if it was killed."""
    tests_passed: int
    tests_failed: int
    tests_errors: int
    duration_s: float
    """Wall-clock seconds, including interpreter start-up."""
    output: str
    """Combined stdout and stderr, head and tail kept when over the output limit."""
    timed_out: bool
    command: list[str]
    """The pytest argv that was run, with cwd set to the workspace root."""
    sandbox: str = "none"
    """``"bwrap"`` when the run was confined by bubblewrap, else ``"none"``."""


async def run_pytest(
    root: Path,
    target: str | None = None,
    *,
    # A parameter, not the caller's asyncio.timeout(): expiry must yield a report
    # (timed_out=True, partial output), not just a cancelled await.
    timeout: float = 60.0,  # noqa: ASYNC109
    max_output: int = 8000,
    sandbox: Sandbox | None = None,
) -> TestReport:
    """Run pytest on ``target`` (inside ``root``; all tests if None), confined by ``sandbox``,
    loading no installed plugin (a run would depend on them and start ten times slower).
    Raises ``WorkspaceError`` if the target escapes the workspace or does not exist."""
    # Path checks stat the file system, so they run off the event loop too.
    workspace = await asyncio.to_thread(Workspace, root)
    target_arg = await asyncio.to_thread(_check_target, workspace, target)
    config = await asyncio.to_thread(_config_file, workspace.root)
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    # Confine pytest to the workspace: without these it reads the config file and
    # imports the conftest.py files of parent directories, i.e. code outside the root.
    command += [f"--config-file={config}", "--rootdir=.", "--confcutdir=."]
    command += ["--color=no"]  # escape codes are noise to the model reading the output
    if target_arg is not None:
        command.append(target_arg)
    if sandbox is None:
        sandbox = await asyncio.to_thread(detect_sandbox)
    marker_var, marker = new_marker()
    env = {k: v for k, v in os.environ.items() if not _changes_pytest_output(k)}
    env.update(
        PYTHONPATH=str(workspace.root),
        PYTHONDONTWRITEBYTECODE="1",
        PYTEST_DISABLE_PLUGIN_AUTOLOAD="1",
        # pytest sizes its separator lines and diffs to the terminal; pin the width so
        # the same tests give the same output on every machine (replays depend on it).
        COLUMNS=str(_COLUMNS),
        LINES="24",
    )
    env[marker_var] = marker

    started = time.monotonic()
    proc = await asyncio.create_subprocess_exec(
        *sandbox.command(command, workspace.root),
        cwd=workspace.root,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,  # own process group, so one killpg reaches every child
    )
    assert proc.stdout is not None
    sink = _OutputSink(max_output)
    reader = asyncio.create_task(sink.drain(proc.stdout))
    timed_out = False
    try:
        try:
            async with asyncio.timeout(timeout):  # wait_for may lose a cancel (3.11)
                await proc.wait()
        except TimeoutError:
            timed_out = True
    finally:
        # Always kill the tree: on timeout, on our own cancellation, and after a normal
        # exit too, so a background process a test left behind cannot hold the pipe.
        await asyncio.to_thread(partial(kill_tree, proc.pid, marker,
                                        leader_alive=proc.returncode is None))
        if proc.returncode is None:
            await asyncio.shield(proc.wait())
        try:
            async with asyncio.timeout(_DRAIN_TIMEOUT_S):
                await reader
        except TimeoutError:
            pass  # the reader was cancelled; keep what it collected
    duration = time.monotonic() - started
    exit_code = proc.returncode if proc.returncode is not None else -signal.SIGKILL

    counts = _parse_counts(sink.parse_tail())
    notes: list[str] = []
    if timed_out:
        notes.append(
            f"[pytest timed out after {timeout:g}s; it and every process it started were killed. "
            f"A test probably hangs or waits for input; the output below shows how far it got.]"
        )
    elif exit_code == 5:
        notes.append(
            "[pytest collected no tests (exit code 5). Check that the target exists and that "
            "test files are named test_*.py with functions named test_*.]"
        )
    return TestReport(
        passed=exit_code == 0 and not timed_out,
        exit_code=exit_code,
        tests_passed=counts["passed"],
        tests_failed=counts["failed"],
        tests_errors=counts["errors"],
        duration_s=round(duration, 3),
        output="\n".join([*notes, sink.text()]),
        timed_out=timed_out,
        command=command,
        sandbox=sandbox.kind,
    )


# Variables that change what pytest prints: a CI marker (pytest then stops truncating
# its summary lines), colour switches, options and plugins from the caller's shell.
_OUTPUT_VARS = frozenset(
    {"CI", "BUILD_NUMBER", "PY_COLORS", "FORCE_COLOR", "NO_COLOR", "PYTHONWARNINGS"}
)


def _changes_pytest_output(name: str) -> bool:
    """Whether the caller's ``name`` variable must not reach the pytest child (a recorded
    session replays only if the output is the same on every machine)."""
    return name in _OUTPUT_VARS or name.startswith("PYTEST_")


def _check_target(workspace: Workspace, target: str | None) -> str | None:
    """Confine a path or ``path::node`` target to the workspace; return it normalized."""
    if target is None:
        return None
    path_part, sep, node = target.partition("::")
    if path_part.startswith("-"):
        # pytest would read it as an option, e.g. "-p" to load an arbitrary plugin.
        raise WorkspaceError(f"test target {target!r} starts with '-'; give a file or directory")
    real = workspace.resolve(path_part)
    if not real.exists():
        raise WorkspaceError(
            f"test target {path_part!r} does not exist in the workspace; "
            f"write the test file first or run all tests with no target"
        )
    rel = real.relative_to(workspace.root).as_posix() if real != workspace.root else "."
    return f"{rel}{sep}{node}"


def _config_file(root: Path) -> str:
    """The workspace's own pytest config file, or the null device to use none at all."""
    for name in _CONFIG_FILES:
        if (root / name).is_file():
            return name
    return os.devnull


def _parse_counts(tail: str) -> dict[str, int]:
    """Counts from pytest's last summary line, e.g. ``1 failed, 3 passed in 0.12s``."""
    counts = {"passed": 0, "failed": 0, "errors": 0}
    for line in reversed(tail.splitlines()):
        if _SUMMARY_LINE.search(line) and (found := _SUMMARY_COUNT.findall(line)):
            for number, word in found:
                key = "errors" if word.startswith("error") else word
                counts[key] = int(number)
            break
    return counts


class _OutputSink:
    """Collects a stream keeping only its head and tail, so memory stays bounded."""

    def __init__(self, max_output: int) -> None:
        self.head_limit = max(max_output, 0) // 2
        self.tail_limit = max(max_output, 0) - self.head_limit
        self.head = bytearray()
        self.tail = bytearray()
        self.parse = bytearray()
        self.total = 0

    async def drain(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(_READ_CHUNK):
            self.add(chunk)

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        self.parse += chunk
        del self.parse[: max(len(self.parse) - _PARSE_TAIL_BYTES, 0)]
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        self.tail += chunk
        del self.tail[: max(len(self.tail) - self.tail_limit, 0)]

    def text(self) -> str:
        dropped = self.total - len(self.head) - len(self.tail)
        if dropped <= 0:
            return bytes(self.head + self.tail).decode("utf-8", errors="replace")
        head = self.head.decode("utf-8", errors="replace")
        tail = self.tail.decode("utf-8", errors="replace")
        return f"{head}\n[... {dropped} bytes truncated ...]\n{tail}"

    def parse_tail(self) -> str:
        return bytes(self.parse).decode("utf-8", errors="replace")
