"""Fixtures of the end-to-end tests: one uninterrupted demo run, shared as the reference."""

from __future__ import annotations

import fcntl
import os
import pickle
import tempfile
from pathlib import Path

import pytest
from e2e_helpers import Reference, board, cli, only_run_id, workspace_files


def _demo(root: Path) -> Reference:
    db, workspace = root / "demo.db", root / "ws"
    result = cli("demo", "--db", db, "--workspace", workspace)
    assert result.code == 0, result
    run_id = only_run_id(db)
    return Reference(db, workspace, run_id, result, workspace_files(workspace),
                     board(db, run_id))


@pytest.fixture(scope="session")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Reference:
    """The demo run once per test session, not once per xdist worker: the first worker to
    ask runs it under a lock and saves its snapshot; the others load that snapshot, taken
    before any test ran (a test may run pytest in its workspace and add caches)."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    saved = shared / "e2e-reference.pickle"
    with (shared / "e2e-reference.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not saved.exists():
            root = Path(tempfile.mkdtemp(prefix="e2e-reference-", dir=shared))
            saved.write_bytes(pickle.dumps(_demo(root)))
    loaded = pickle.loads(saved.read_bytes())
    assert isinstance(loaded, Reference)
    return loaded
