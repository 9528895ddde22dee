"""Where model-written tests run: a bubblewrap sandbox when it works, and a whole-tree kill.

A test a model wrote is untrusted code. Under ``bwrap`` it sees the file system read-only
except its workspace, a private ``/tmp`` and no network, in a PID namespace the kernel
kills whole with bwrap. Without a working bwrap (a warning says so once) the kill still
reaches the process group, its session, and any process carrying the run's marker
variable (a child that called ``setsid`` keeps its inherited environment).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Literal

import structlog

__all__ = ["MARKER_VAR", "Sandbox", "detect_sandbox", "kill_tree", "new_marker", "run_python"]

MARKER_VAR = "ORCHESTRA_TEST_RUN"
"""Environment variable that tags every process of one test run (for the kill sweep)."""

INSTALL_HINT = "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap)"
_PROBE_TIMEOUT_S = 20.0
_SWEEP_ROUNDS = 5

_log = structlog.get_logger("agents.sandbox")


@dataclass(frozen=True, slots=True)
class Sandbox:
    """How a test command is confined: ``bwrap`` (with its path) or ``none`` (and why)."""

    kind: Literal["bwrap", "none"]
    bwrap: str | None = None
    reason: str = ""
    """Why there is no sandbox (``kind == "none"``)."""

    @classmethod
    def unsandboxed(cls, reason: str) -> Sandbox:
        return cls("none", reason=reason)

    def command(self, argv: Sequence[str], workspace: Path) -> list[str]:
        """``argv`` wrapped to run confined to ``workspace``, bound at its own path so the
        output's paths are the same inside and out (recorded sessions replay); ``/tmp``
        is mounted before it, so a workspace under ``/tmp`` stays visible."""
        if self.kind == "none" or self.bwrap is None:
            return list(argv)
        ws = str(workspace)
        keep = [arg for path in _interpreter_dirs_under_tmp()
                for arg in ("--ro-bind", path, path)]
        return [self.bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                "--tmpfs", "/tmp", *keep, "--bind", ws, ws,
                "--unshare-all",  # network, PID, IPC, UTS, cgroup (and user, if allowed)
                # run as root, bwrap would leave the tests every capability: enough to
                # `mount -o remount,bind,rw /` and write anywhere (measured, bwrap 0.8)
                "--cap-drop", "ALL",
                "--die-with-parent", "--new-session", "--chdir", ws, "--", *argv]


def _interpreter_dirs_under_tmp() -> list[str]:
    """The Python running the tests where the private ``/tmp`` would hide it (a virtualenv
    under ``/tmp``): visible, read-only, or pytest cannot start inside the sandbox."""
    tmp = Path("/tmp")
    found: set[Path] = set()
    for entry in (sys.prefix, sys.base_prefix, sys.exec_prefix, *sys.path):
        if not entry:
            continue
        path = Path(entry).resolve()
        if path.is_relative_to(tmp) and path != tmp and path.exists():
            found.add(path)
    # a directory inside another one kept already is visible through it
    return [str(p) for p in sorted(found)
            if not any(p != q and p.is_relative_to(q) for q in found)]


_detect_lock = threading.Lock()
_detected: Sandbox | None = None


def detect_sandbox() -> Sandbox:
    """The sandbox this machine offers, probed once per process (blocking), a missing or
    broken bwrap reported once as a warning naming the fix."""
    global _detected  # a fact about the machine, not state of any caller
    with _detect_lock:
        if _detected is None:
            _detected = _probe(shutil.which("bwrap"))
            if _detected.kind == "none":
                # one sentence a newcomer can act on: what it means, why, and the fix
                _log.warning("tests a model writes will run UNSANDBOXED (they could write "
                             f"anywhere this user can and reach the network): "
                             f"{_detected.reason}", sandbox="none")
        return _detected


def _probe(bwrap: str | None) -> Sandbox:
    """Run a trivial command under the exact options used for tests."""
    if bwrap is None:
        return Sandbox.unsandboxed(f"bwrap is not installed; {INSTALL_HINT}")
    probe = Sandbox("bwrap", bwrap).command(["true"], Path.cwd())
    try:
        done = subprocess.run(probe, capture_output=True, timeout=_PROBE_TIMEOUT_S,
                              stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Sandbox.unsandboxed(f"{bwrap} cannot run ({exc})")
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip()[:300]
        return Sandbox.unsandboxed(
            f"{bwrap} is installed but cannot create its namespaces here ({said}); "
            "it needs unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1"
            " / user.max_user_namespaces > 0) or root")
    return Sandbox("bwrap", bwrap)


def new_marker() -> tuple[str, str]:
    """A fresh (variable, value) pair to put in one test run's environment."""
    return MARKER_VAR, secrets.token_hex(8)


def kill_tree(pgid: int, marker: str | None = None, *, leader_alive: bool = True) -> int:
    """SIGKILL every process whose environment holds ``MARKER_VAR=marker`` and, while the
    leader is not reaped (after, its pid may be reused), the group ``pgid`` and its
    session, until a sweep finds none; returns how many were signalled."""
    if leader_alive:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
    tag = f"{MARKER_VAR}={marker}".encode() if marker else None
    group = pgid if leader_alive else None
    killed = 0
    for _ in range(_SWEEP_ROUNDS):
        found = [pid for pid in _pids() if _belongs(pid, group, tag)]
        for pid in found:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        killed += len(found)
        if not found:
            break
    return killed


def _pids() -> list[int]:
    try:
        names = os.listdir("/proc")
    except OSError:  # no procfs (macOS): the group kill is all there is
        return []
    me = os.getpid()
    return [int(n) for n in names if n.isdigit() and int(n) != me]


def _belongs(pid: int, pgid: int | None, tag: bytes | None) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        # fields after the parenthesized command: state ppid pgrp session ...
        fields = stat[stat.rindex(b")") + 2:].split()
        if fields[0] == b"Z":
            return False  # a zombie is already dead; its parent reaps it
        if pgid is not None and (int(fields[2]) == pgid or int(fields[3]) == pgid):
            return True
        if tag is None:
            return False
        with open(f"/proc/{pid}/environ", "rb") as f:
            return tag in f.read().split(b"\0")
    except (OSError, ValueError, IndexError):
        return False


async def run_python(root: Path, args: Sequence[str], *, timeout: float,  # noqa: ASYNC109
                     stdin: bytes | None = None, stderr: bool = True, **env: str
                     ) -> tuple[int, bytes] | None:
    """``python args`` run from the workspace at ``root``, sandboxed and killed whole as the
    tests are: its exit code and output, or None when it ran past ``timeout`` seconds."""
    sandbox = await asyncio.to_thread(detect_sandbox)
    marker_var, marker = new_marker()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHON"))},
           "PYTHONPATH": str(root), "PYTHONDONTWRITEBYTECODE": "1", **env, marker_var: marker}
    pipe = asyncio.subprocess
    proc = await asyncio.create_subprocess_exec(
        *sandbox.command([sys.executable, *args], root), cwd=root, env=env,
        stdin=pipe.DEVNULL if stdin is None else pipe.PIPE, stdout=pipe.PIPE,
        stderr=pipe.STDOUT if stderr else pipe.DEVNULL, start_new_session=True)
    try:
        async with asyncio.timeout(timeout):  # wait_for may lose a cancel (3.11)
            out, _ = await proc.communicate(stdin)
        return proc.returncode or 0, out
    except TimeoutError:
        return None
    finally:
        await asyncio.to_thread(partial(kill_tree, proc.pid, marker,
                                        leader_alive=proc.returncode is None))
        if proc.returncode is None:
            await asyncio.shield(proc.wait())
