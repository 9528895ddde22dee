"""A run whose pipeline does not import where `orchestra worker` runs no longer stops
the worker: it says which run and why, serves the others, leaves that run untouched
for a worker that can serve it, and still exits once idle."""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from pathlib import Path

import pytest
from e2e_helpers import cli, query

from orchestra import Coordinator, SQLiteBlackboard
from orchestra.coordinator.pipeline import load_pipeline

pytestmark = pytest.mark.slow

PIPELINE = '''
from orchestra import FunctionModel, NewTask, Pipeline, Role, reply


class Echo(Role):
    """You answer."""

    name = "echo"
    output = str


def build(run_input):
    return Pipeline("echo", roles=[Echo()], model=FunctionModel(lambda _r: reply("x")),
                    start=lambda inp: [NewTask("echo", inp)])
'''


async def _create(db: Path, refs: list[str]) -> list[str]:
    async with await SQLiteBlackboard.open(db) as store:
        return [(await Coordinator(store, load_pipeline(ref, {})).start({"n": i})).id
                for i, ref in enumerate(refs)]


@pytest.fixture
def runs(tmp_path: Path) -> tuple[str, str]:
    """Two pending runs, the older one of a module since removed: (gone, ok)."""
    for name in ("gonepipe", "okpipe"):
        (tmp_path / f"{name}.py").write_text(PIPELINE)
    sys.path.insert(0, str(tmp_path))
    try:
        gone, ok = asyncio.run(_create(tmp_path / "o.db", ["gonepipe:build", "okpipe:build"]))
    finally:
        sys.path.remove(str(tmp_path))
        for name in ("gonepipe", "okpipe"):
            sys.modules.pop(name, None)
    (tmp_path / "gonepipe.py").unlink()
    shutil.rmtree(tmp_path / "__pycache__", ignore_errors=True)
    return gone, ok


def test_a_worker_skips_a_run_it_cannot_import_and_serves_the_rest(
        tmp_path: Path, runs: tuple[str, str]) -> None:
    gone, ok = runs
    result = cli("worker", "--db", tmp_path / "o.db", "--idle-exit", "1", cwd=tmp_path)
    assert result.code == 0, result
    assert "Traceback" not in result.stderr + result.stdout, result
    assert (f"worker: cannot serve run {gone} here: cannot import pipeline 'gonepipe:build'"
            in result.stdout), result
    assert "trying this one again in 30 s" in result.stdout
    assert f"run {ok}: completed" in result.stdout, result
    db = tmp_path / "o.db"
    assert query(db, "SELECT id, status FROM runs ORDER BY id") == sorted(
        [(gone, "pending"), (ok, "completed")])
    # untouched: never claimed here, so a worker that can import it takes it as new
    assert query(db, "SELECT status, attempt FROM tasks WHERE run_id = ?", (gone,)) == [
        ("pending", 0)]


def test_with_json_the_skip_is_one_document(tmp_path: Path, runs: tuple[str, str]) -> None:
    gone, ok = runs
    result = cli("worker", "--db", tmp_path / "o.db", "--idle-exit", "1", "--json",
                 cwd=tmp_path)
    assert result.code == 0, result
    docs = [json.loads(line) for line in result.stdout.splitlines()]
    skip = next(d for d in docs if "skipped" in d)
    assert skip["run"] == gone and skip["retry_in_s"] == 30.0
    assert "no module named 'gonepipe'" in skip["skipped"]
    assert {"run": ok, "status": "completed"} in docs
