"""The MCP examples run offline: examples/mcp_tools.py (mcp-server-time's tools, then a fork
resumed from the journal with the server absent) and examples/mcp_git.py (mcp-server-git on
a temporary repository, then a replay: run with the server absent), each the same answer."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_mcp_example_runs_and_replays_without_its_server() -> None:
    proc = subprocess.run([sys.executable, "examples/mcp_tools.py"], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert ": completed: Europe/Paris: " in proc.stdout and "Asia/Tokyo: " in proc.stdout
    assert "  step 1: tool mcp.tools\n" in proc.stdout
    assert "(server absent): completed, same answer: True" in proc.stdout


def test_the_git_example_runs_and_replays_its_recording_without_the_server() -> None:
    proc = subprocess.run([sys.executable, "examples/mcp_git.py"], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert ": completed: the latest commit says: " in proc.stdout
    assert "Add a greeting" in proc.stdout
    assert "  step 3: tool git_log\n" in proc.stdout
    assert "(server absent): completed, same answer: True" in proc.stdout
