"""One envelope for every list (issue 27, item 13): ``{kind: [...], "next_cursor": ...}``
from the API, the Python client and the CLI's ``--json``, local or through ``--server``."""

from __future__ import annotations

import json
import subprocess
import sys
import time

from server_helpers import PIPELINE, REPO, Server, child_env

from orchestra.client import Client


def _cli(*args: str) -> dict[str, object]:
    out = subprocess.run([sys.executable, "-m", "orchestra.cli.main", *args], env=child_env(),
                         capture_output=True, text=True, timeout=60, cwd=REPO)
    assert out.returncode == 0, out.stderr
    data: dict[str, object] = json.loads(out.stdout)
    return data


def test_every_list_has_the_same_envelope(server: Server) -> None:
    with Client(server.url) as api:
        run_id = api.runs.create(PIPELINE, {"turns": 1, "delay": 0.01})["run_id"]
        deadline = time.monotonic() + 60
        while api.runs.get(run_id)["status"] != "completed":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        pages = {"runs": api.runs.list(), "approvals": api.runs.approvals(run_id)}
        for kind in ("plans", "handoffs", "notes", "agents/counter/messages"):
            pages[kind.rsplit("/", 1)[-1]] = api.request("GET", f"/v1/runs/{run_id}/{kind}")
    for kind, page in pages.items():
        assert set(page) == {kind, "next_cursor"} and isinstance(page[kind], list), kind
    through = _cli("runs", "--json", "--server", server.url)
    local = _cli("runs", "--json", "--db", str(server.db))
    for page in (through, local):
        assert set(page) == {"runs", "next_cursor"}
        assert run_id in [r["id"] for r in page["runs"]]  # type: ignore[attr-defined]
