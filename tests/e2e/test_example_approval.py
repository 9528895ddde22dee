"""examples/approval.py: parked on a needs_approval tool, approved from the CLI or from
Python, resumed; the tool's effect happens exactly once; no library log on stdout."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from orchestra.cli.main import main

ROOT = Path(__file__).resolve().parents[2]


def _script(db: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "examples/approval.py", "--db", str(db), *extra],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)


def _parked(db: Path) -> tuple[str, str]:
    first = _script(db)
    assert first.returncode == 4, first.stderr
    assert "[info" not in first.stdout and "waiting for approval" in first.stderr  # logs
    found = re.search(r"waiting for approval (\w+):.*orchestra resume (\w+) --db", first.stdout,
                      re.S)
    assert found, first.stdout
    return found.group(1), found.group(2)


def test_approved_from_the_cli_then_resumed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "a.db"
    approval, run_id = _parked(db)
    log = db.with_suffix(".published.log")
    assert not log.exists()  # parked before the effect
    monkeypatch.chdir(ROOT)
    assert main(["approve", approval, "--db", str(db)]) == 0
    assert main(["resume", run_id, "--db", str(db)]) == 0  # the ref was derived: no setup
    assert log.read_text().count("published 1.2.0") == 1
    assert "completed" in capsys.readouterr().out


def test_approved_from_python_then_resumed(tmp_path: Path) -> None:
    db = tmp_path / "b.db"
    _parked(db)
    second = _script(db, "--approve")
    assert second.returncode == 0, second.stdout + second.stderr
    assert "approved publish" in second.stdout and "version 1.2.0 is live" in second.stdout
    assert db.with_suffix(".published.log").read_text().count("published 1.2.0") == 1
