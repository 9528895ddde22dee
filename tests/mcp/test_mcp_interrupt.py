"""Ctrl-C of ``orchestra run`` while a stdio MCP server serves it: the run stops cleanly
and leaves no server process behind."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from interrupt_pipeline import REF

ROOT = Path(__file__).parents[2]


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    with open(f"/proc/{pid}/stat") as f:  # a zombie nobody reaped yet is dead too
        return f.read().split(")")[-1].split()[0] == "Z"


def _wait(check: object, what: str, proc: subprocess.Popen[bytes] | None = None) -> None:
    deadline = time.monotonic() + 60
    while not check():  # type: ignore[operator]
        assert proc is None or proc.poll() is None, f"orchestra run ended before {what}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


@pytest.mark.slow
def test_ctrl_c_leaves_no_server_process(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("ORCHESTRA_MODEL", "ORCHESTRA_LOG")}
    env["PYTHONPATH"] = str(ROOT)
    err = tmp_path / "run.err"
    with open(err, "wb") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-m", "orchestra.cli.main", "run", "--pipeline", REF,
             "--input", json.dumps({"work": str(tmp_path)}), "--db", str(tmp_path / "o.db")],
            env=env, stdout=subprocess.DEVNULL, stderr=stderr, start_new_session=True)
    try:
        begun = tmp_path / "effects.begun"
        _wait(lambda: begun.exists() and begun.read_text().count("\n") >= 2,
              "the second MCP call", proc)
        server = int((tmp_path / "server.pid").read_text())
        assert not _gone(server)
        proc.send_signal(signal.SIGINT)  # Ctrl-C, to orchestra alone (not its group)
        assert proc.wait(timeout=60) == 130, err.read_text()
        _wait(lambda: _gone(server), f"the MCP server (pid {server}) to end")
        assert "Traceback" not in err.read_text(), err.read_text()
    finally:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
