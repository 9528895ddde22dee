"""Approvals in the background (issue 27, item 5): a running `orchestra worker` continues
a run once its approval is decided (within its lease), `approve` says whether a live
worker will, and `worker --run` on a run it cannot serve says why and exits non-zero."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from e2e_helpers import REPO, cli, kill_group, logs, poll, query, spawn

pytestmark = pytest.mark.slow
APPROVAL = "examples.approval:make_pipeline"
LEASE = "3"


def _parked(tmp_path: Path) -> tuple[Path, str, str]:
    db = tmp_path / "a.db"
    first = cli("run", "--pipeline", APPROVAL, "--input",
                json.dumps({"log": str(tmp_path / "published.log")}), "--db", db, cwd=REPO)
    assert first.code == 4, first
    found = re.search(r"waiting for approval (\w+)", first.stdout)
    assert found, first
    return db, found.group(1), first.stdout.split()[1]


def test_a_worker_continues_an_approved_run(tmp_path: Path) -> None:
    db, approval, run_id = _parked(tmp_path)
    worker = spawn("worker", "--db", db, "--lease", LEASE, log=tmp_path / "worker", cwd=REPO)
    try:
        # the worker holds the parked run: the store knows a live process will continue it
        poll(lambda: _held(db, run_id),
             what="the worker holding the parked run", proc=worker, timeout=30)
        decided = cli("approve", approval, "--db", db, cwd=REPO)
        assert decided.code == 0, decided
        assert f"a live worker continues run {run_id}" in decided.stdout, decided
        assert "orchestra resume" not in decided.stdout
        poll(lambda: query(db, "SELECT status FROM runs WHERE id = ?",
                           (run_id,)) == [("completed",)],
             what="the worker finishing the approved run", proc=worker, timeout=float(LEASE) * 4)
    finally:
        kill_group(worker)
    assert (tmp_path / "published.log").read_text().count("published 1.2.0") == 1, \
        logs(tmp_path / "worker")


def _held(db: Path, run_id: str) -> bool:
    import time

    rows = query(db, "SELECT max(expires_at) FROM run_servers WHERE run_id = ?", (run_id,))
    return bool(rows and rows[0][0] and rows[0][0] > time.time())


def test_without_a_worker_approve_says_to_resume(tmp_path: Path) -> None:
    db, approval, run_id = _parked(tmp_path)
    decided = cli("approve", approval, "--db", db, cwd=REPO)
    assert decided.code == 0, decided
    assert f"no worker serves run {run_id}; continue it with: orchestra resume {run_id}" \
        in decided.stdout, decided


def test_worker_run_on_a_run_it_cannot_serve_says_why(tmp_path: Path) -> None:
    db, approval, run_id = _parked(tmp_path)
    waiting = cli("worker", "--run", run_id, "--db", db, cwd=REPO)
    assert waiting.code == 2 and "waits for a human decision" in waiting.stderr, waiting
    assert cli("approve", approval, "--db", db, cwd=REPO).code == 0
    served = cli("worker", "--run", run_id, "--db", db, cwd=REPO)  # now it has work
    assert served.code == 0 and f"run {run_id}: completed" in served.stdout, served
    done = cli("worker", "--run", run_id, "--db", db, cwd=REPO)
    assert done.code == 2 and "is completed: there is nothing left to serve" in done.stderr
    assert "Traceback" not in done.stderr
