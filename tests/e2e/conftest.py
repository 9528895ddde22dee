"""Fixtures of the end-to-end tests: one uninterrupted demo run, shared as the reference."""

from __future__ import annotations

import pytest
from e2e_helpers import Reference, board, cli, only_run_id, workspace_files


@pytest.fixture(scope="session")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Reference:
    root = tmp_path_factory.mktemp("reference")
    db, workspace = root / "demo.db", root / "ws"
    result = cli("demo", "--db", db, "--workspace", workspace)
    assert result.code == 0, result
    run_id = only_run_id(db)
    return Reference(db, workspace, run_id, result, workspace_files(workspace),
                     board(db, run_id))
