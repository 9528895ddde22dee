"""A store another user owns, readable but not writable by this one, is read by the
read-only commands (issue 27, item 8): a real second user (root drops to ``nobody``),
the store in a directory that user cannot write, as a fresh ``orchestra`` leaves it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e_helpers import REPO, Result, child_env, cli, cli_argv

pytestmark = pytest.mark.slow
EXIT_STORE = 3


@pytest.fixture
def other_users_store() -> Iterator[tuple[Path, Path, str]]:
    """(store, a copy only root reads, run id): a parked run in a 0755 directory."""
    root = Path(tempfile.mkdtemp(prefix="orchestra-other-"))
    try:
        root.chmod(0o755)  # others may enter and read, not write
        db = root / "store.db"
        parked = cli("run", "--pipeline", "examples.approval:make_pipeline", "--input",
                     json.dumps({"log": str(root / "published.log")}), "--db", db, cwd=REPO)
        assert parked.code == 4, parked
        warm = Path(tempfile.mkdtemp(prefix="orchestra-warm-")) / "store.db"
        shutil.copy(db, warm)
        yield db, warm, parked.stdout.split()[1]
        shutil.rmtree(warm.parent)
    finally:
        shutil.rmtree(root)


def _as_other_user(warm: Path, *args: str | Path) -> Result:
    if os.geteuid() == 0:
        argv = [sys.executable, str(Path(__file__).with_name("other_user.py")), str(warm),
                *map(str, args)]
    else:  # already another user than root: the store is made unwritable by mode bits
        argv = cli_argv(*args)
    proc = subprocess.run(argv, env=child_env(), capture_output=True, text=True, timeout=90,
                          cwd="/")
    return Result(proc.returncode, proc.stdout, proc.stderr)


def test_another_users_store_reads_and_refuses_writes(
        other_users_store: tuple[Path, Path, str]) -> None:
    db, warm, run_id = other_users_store
    if os.geteuid() != 0:
        db.chmod(0o444)
        db.parent.chmod(0o555)
    before = db.read_bytes()
    runs = _as_other_user(warm, "runs", "--db", db, "--json")
    assert runs.code == 0, runs
    assert [r["id"] for r in json.loads(runs.stdout)["runs"]] == [run_id]
    for argv in (["show", run_id], ["events", run_id], ["board", run_id]):
        res = _as_other_user(warm, *argv, "--db", db)
        assert res.code == 0 and "Traceback" not in res.stderr, (argv, res)
        assert res.stdout.strip(), (argv, res)
    cancel = _as_other_user(warm, "cancel", run_id, "--db", db)
    assert cancel.code == EXIT_STORE and "read-only" in cancel.stderr, cancel
    assert db.read_bytes() == before
