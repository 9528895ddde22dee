"""A store the user cannot write: the read commands work (the file is opened read-only),
the writing commands say so in one line with exit code 3, and the file stays unchanged.

Root ignores file permissions, so the store is made read-only the way a read-only mount
does it: the CLI runs under bubblewrap with the store's directory (or file) bound
read-only. As another user, ``chmod`` does the same.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
from contextlib import closing
from pathlib import Path

import pytest
from e2e_helpers import CLI_TIMEOUT, Reference, Result, child_env, cli_argv, connect_ro

from agents.sandbox import detect_sandbox

EXIT_STORE = 3


def _read_only_cli(target: Path, *args: str | Path) -> Result:
    """``orchestra ARGS`` with ``target`` (a directory or a file) read-only."""
    if os.geteuid() == 0:
        sandbox = detect_sandbox()
        if sandbox.kind != "bwrap" or sandbox.bwrap is None:
            pytest.skip("as root a read-only store needs a read-only mount: install bubblewrap "
                        f"(Debian package 'bubblewrap'); {sandbox.reason}")
        argv = [sandbox.bwrap, "--bind", "/", "/", "--ro-bind", str(target), str(target),
                "--dev", "/dev", "--proc", "/proc", "--", *cli_argv(*args)]
    else:
        argv = cli_argv(*args)
    proc = subprocess.run(argv, env=child_env(), capture_output=True, text=True,
                          timeout=CLI_TIMEOUT)
    return Result(proc.returncode, proc.stdout, proc.stderr)


@pytest.fixture(params=["directory", "file"])
def store(request: pytest.FixtureRequest, reference: Reference, tmp_path: Path) -> Path:
    """A copy of the demo's store, in a read-only directory or as a read-only file."""
    folder = tmp_path / "ro"
    folder.mkdir()
    db = folder / "store.db"
    with closing(connect_ro(reference.db)) as src, closing(sqlite3.connect(db)) as dst:
        src.backup(dst)
    with closing(sqlite3.connect(db)) as conn:  # a WAL store, as orchestra leaves it
        conn.execute("PRAGMA journal_mode = WAL")
    request.node.ro_target = folder if request.param == "directory" else db
    if os.geteuid() != 0:
        db.chmod(0o444)
        if request.param == "directory":
            folder.chmod(0o555)
    return db


def _digest(db: Path) -> str:
    # (a reader of a WAL store in a writable directory may create the -shm index there)
    return hashlib.sha256(db.read_bytes()).hexdigest()


def test_read_commands_work_and_writing_commands_say_why_not(
        store: Path, reference: Reference, request: pytest.FixtureRequest) -> None:
    target: Path = request.node.ro_target
    before = _digest(store)
    run = reference.run_id

    runs = _read_only_cli(target, "runs", "--db", store, "--json")
    assert runs.code == 0, runs
    assert [r["id"] for r in json.loads(runs.stdout)["runs"]] == [run]
    show = _read_only_cli(target, "show", run, "--db", store, "--json")
    assert show.code == 0 and json.loads(show.stdout)["status"] == "completed", show
    events = _read_only_cli(target, "events", run, "--db", store)
    assert events.code == 0 and "run.completed" in events.stdout, events
    board = _read_only_cli(target, "board", run, "plans", "--db", store, "--json")
    assert board.code == 0 and len(json.loads(board.stdout)["plans"]) == 1, board

    for argv in (["cancel", run], ["resume", run], ["approve", "nope"],
                 ["demo", "--workspace", store.parent.parent / "ws"], ["worker"]):
        res = _read_only_cli(target, *argv, "--db", store)
        assert res.code == EXIT_STORE, (argv, res)
        lines = res.stderr.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in res.stderr, res
        assert str(store) in lines[0] and "read-only" in lines[0], res
        assert f"`orchestra {argv[0]}` writes to the store" in lines[0], res
    assert not (store.parent.parent / "ws").exists()
    assert _digest(store) == before
