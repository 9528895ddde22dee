"""The service's examples (``docs/server.md``, linked from the README's "Running as a
service"), run against a real server: every curl command succeeds and the Python block
does what it says.

(Its Python block is fenced as ``py``: it needs a server, so the docs-wide test that
executes every ``python`` block without one leaves it to this test.)"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from pathlib import Path

import httpx
import pytest
from server_helpers import PIPELINE, REPO, Server, wait_for

SECTION = (REPO / "docs" / "server.md").read_text()
BLOCKS = re.findall(r"^```(\w*)\n(.*?)^```", SECTION, re.S | re.M)


def _curls(code: str) -> list[str]:
    joined = code.replace("\\\n", " ")
    return [line.split(" #")[0].strip() for line in joined.splitlines()
            if line.startswith("curl ")]


def test_the_curl_examples_work(server: Server, tmp_path: Path) -> None:
    host = server.url.removeprefix("http://")
    parked = httpx.post(f"{server.url}/v1/runs", json={"pipeline": PIPELINE, "input": {
        "turns": 0, "delay": 0, "deploy": True}}).json()["run_id"]
    wait_for(lambda: httpx.get(f"{server.url}/v1/runs/{parked}").json()["status"] == "waiting",
             what="waiting")
    [approval] = httpx.get(f"{server.url}/v1/runs/{parked}/approvals").json()["approvals"]
    commands = [c for lang, code in BLOCKS if lang == "sh" for c in _curls(code)]
    assert len(commands) == 7
    run_id = None
    for command in commands:
        uses_approval = "APPROVAL_ID" in command or "approvals?" in command
        command = command.replace("localhost:8765", host).replace(
            "RUN_ID", parked if uses_approval else str(run_id)).replace(
            "APPROVAL_ID", approval["id"])
        argv = shlex.split(command)
        argv.insert(1, "--fail-with-body")
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=tmp_path)
        assert done.returncode == 0, (command, done.stdout, done.stderr)
        if run_id is None:
            run_id = json.loads(done.stdout)["run_id"]
    final = httpx.get(f"{server.url}/v1/runs/{parked}").json()
    wait_for(lambda: httpx.get(f"{server.url}/v1/runs/{parked}").json()["status"]
             == "completed", what="the approved run completing")
    assert final["approvals_pending"] == []


def test_the_python_example_works(server: Server, capsys: pytest.CaptureFixture[str]) -> None:
    [code] = [code for lang, code in BLOCKS if lang == "py"]
    exec(compile(code.replace("http://127.0.0.1:8765", server.url), "docs/server.md", "exec"), {})
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "1 run.created" and out[-2].endswith("run.completed")
    assert out[-1] == "completed"
