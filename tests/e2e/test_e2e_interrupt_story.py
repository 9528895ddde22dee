"""After Ctrl-C the story is right at once (issue 27, item 6): `runs` and `show` say the
run was interrupted and how to resume it (not "running" until a lease runs out), and a
viewer that is Ctrl-C'd exits 130 quietly, without speaking for the run."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest
from e2e_helpers import cli, kill_group, logs, only_run_id, spawn
from test_e2e_interrupt import start_slow_run

pytestmark = pytest.mark.slow


def test_an_interrupted_run_says_so_at_once(tmp_path: Path) -> None:
    proc, db, log = start_slow_run(tmp_path, turns=4, delay=0.3,
                                   effects=str(tmp_path / "effects.log"))
    try:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 130, logs(log)
    finally:
        kill_group(proc)
    run_id = only_run_id(db)
    listed = cli("runs", "--db", db)  # right away: the default lease is 30 s
    assert f"interrupted — orchestra resume {run_id}" in listed.stdout, listed
    data = json.loads(cli("show", run_id, "--db", db, "--json").stdout)
    assert data["run"]["interrupted"] is True and data["run"]["orphaned"] is True
    assert data["status_text"] == f"interrupted — orchestra resume {run_id}"
    assert cli("resume", run_id, "--db", db).code == 0
    assert json.loads(cli("runs", "--db", db, "--json").stdout)["runs"][0]["interrupted"] is False


def test_a_viewer_interrupted_exits_quietly(tmp_path: Path) -> None:
    proc, db, _ = start_slow_run(tmp_path, turns=40, delay=0.3,
                                   effects=str(tmp_path / "effects.log"))
    viewer = spawn("events", only_run_id(db), "--db", db, "--follow", log=tmp_path / "view")
    try:
        _wait_for_output(tmp_path / "view.out")
        viewer.send_signal(signal.SIGINT)
        assert viewer.wait(timeout=30) == 130
    finally:
        kill_group(viewer)
        kill_group(proc)
    err = (tmp_path / "view.err").read_text()
    assert "stopped cleanly" not in err and "resume" not in err and "Traceback" not in err, err


def _wait_for_output(path: Path) -> None:
    deadline = time.monotonic() + 30
    while not (path.exists() and path.read_text().strip()):
        assert time.monotonic() < deadline, "the viewer printed nothing"
        time.sleep(0.05)


