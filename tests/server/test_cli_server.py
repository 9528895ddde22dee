"""The CLI's ``--server URL``: the same commands through the HTTP API (no store file)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from server_helpers import PIPELINE, Server, child_env, wait_for

from orchestra.client import Client


def _cli(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # run from an empty directory: nothing may touch a local store file
    return subprocess.run([sys.executable, "-m", "orchestra.cli.main", *args], cwd=tmp,
                          env=child_env(), capture_output=True, text=True, timeout=120)


def test_cli_commands_work_through_the_server(server: Server, tmp_path: Path) -> None:
    api = Client(server.url)
    run_id = api.runs.create(PIPELINE, {"turns": 1, "delay": 0.01, "deploy": True})["run_id"]
    wait_for(lambda: api.runs.get(run_id)["status"] == "waiting", what="waiting")
    runs = _cli(tmp_path, "runs", "--active", "--json", "--server", server.url)
    assert runs.returncode == 0, runs.stderr
    assert run_id in [r["id"] for r in json.loads(runs.stdout)["runs"]]
    show = _cli(tmp_path, "show", run_id, "--server", server.url)
    assert show.returncode == 0 and "pending approval" in show.stdout
    [approval] = api.runs.approvals(run_id)["approvals"]
    approve = _cli(tmp_path, "approve", approval["id"], "--by", "bob", "--server", server.url)
    assert approve.returncode == 0 and "approved by bob" in approve.stdout
    events = _cli(tmp_path, "events", run_id, "--follow", "--json", "--server", server.url)
    assert events.returncode == 0, events.stderr
    seqs = [json.loads(line)["seq"] for line in events.stdout.splitlines()]
    assert seqs == list(range(1, len(seqs) + 1))
    assert json.loads(events.stdout.splitlines()[-1])["kind"] == "run.completed"
    again = _cli(tmp_path, "deny", approval["id"], "--server", server.url)
    assert again.returncode == 2 and "already approved" in again.stderr
    cancel = _cli(tmp_path, "cancel", "nope", "--server", server.url)
    assert cancel.returncode == 2 and "nope" in cancel.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_paused_run_shows_and_resumes_through_the_server(server: Server,
                                                           tmp_path: Path) -> None:
    api = Client(server.url)
    run_id = api.runs.create(PIPELINE, {"turns": 4, "delay": 0.01}, max_tokens=60)["run_id"]
    wait_for(lambda: api.runs.get(run_id)["status"] == "paused", what="the cap pausing it")
    show = _cli(tmp_path, "show", run_id, "--server", server.url)
    assert show.returncode == 0 and "paused (budget)" in show.stdout, show.stdout
    assert f"orchestra resume {run_id} --server {server.url} --max-tokens" in show.stdout
    runs = _cli(tmp_path, "runs", "--server", server.url)
    assert "paused (budget)" in runs.stdout
    again = _cli(tmp_path, "resume", run_id, "--server", server.url)
    assert again.returncode == 2 and "still 60" in again.stderr, again.stderr
    resumed = _cli(tmp_path, "resume", run_id, "--max-tokens", "100000", "--server", server.url)
    assert resumed.returncode == 0 and "running" in resumed.stdout, resumed.stderr
    wait_for(lambda: api.runs.get(run_id)["status"] == "completed", what="the resumed run")
    assert list(tmp_path.iterdir()) == []
