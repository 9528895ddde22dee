"""kill -9 the stock pipeline extended with a docs writer (issue 48, item 7), resume it
in a new process: the finished module triggers the docs writer exactly once, and the
board is what an uninterrupted run's is."""

from __future__ import annotations

from pathlib import Path

import pytest
from docs_pipeline import SPEC
from e2e_helpers import StoreWatch, cli, kill_group, logs, only_run_id, query, spawn

pytestmark = pytest.mark.slow

REF = "tests.e2e.docs_pipeline:build"
MODEL = "python:tests.e2e.docs_pipeline:"
# where to kill: the docs writer's task claimed (its model never answers), or the
# instant the module's ModuleWritten commits (with the docs writer's task and consumption)
KILL_POINTS = {
    "docs-in-flight": "SELECT 1 FROM events WHERE kind = 'task.claimed' "
                      "AND json_extract(data, '$.role') = 'docswriter'",
    "module-written": "SELECT 1 FROM entries WHERE type = 'ModuleWritten'",
}


def _board(db: Path, run_id: str) -> tuple[list[tuple[str, str]], list[str], list[str]]:
    """The entries (type, author's role), the consumptions' roles, the docs tasks."""
    entries = [(t, a.rsplit("/", 1)[-1]) for t, a in query(
        db, "SELECT type, author FROM entries WHERE run_id = ? ORDER BY position", (run_id,))]
    consumed = [r for (r,) in query(db, "SELECT role FROM consumptions WHERE run_id = ?",
                                    (run_id,))]
    docs = [s for (s,) in query(db, "SELECT status FROM tasks WHERE run_id = ? AND role = ?",
                                (run_id, "docswriter"))]
    return entries, consumed, docs


@pytest.mark.parametrize("point", sorted(KILL_POINTS))
def test_a_killed_run_documents_its_module_once(tmp_path: Path, point: str) -> None:
    spec = tmp_path / "spec.md"
    spec.write_text(SPEC)
    db, log = tmp_path / "o.db", tmp_path / "run"
    proc = spawn("run", "--pipeline", REF, "--spec", spec, "--workspace", tmp_path / "ws",
                 "--db", db, "--model", MODEL + "blocking", log=log)
    try:
        with StoreWatch(db) as watch:
            watch.wait(KILL_POINTS[point], what=point, proc=proc, timeout=120)
    finally:
        kill_group(proc)
        proc.wait()
    run_id = only_run_id(db)
    resumed = cli("resume", run_id, "--db", db, "--model", MODEL + "scripted")
    assert resumed.code == 0, f"{resumed}\n{logs(log)}"
    entries, consumed, docs = _board(db, run_id)
    assert entries == [("TestsWritten", "tester"), ("ModuleWritten", "coder"),
                       ("Docs", "docswriter")]
    assert consumed == ["docswriter"] and docs == ["completed"]
