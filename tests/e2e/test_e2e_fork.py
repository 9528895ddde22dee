"""Forking the demo: a fork resumes from its event, replays what was done by then from its
journal, runs the rest anew, ends as the original did; the original is untouched."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from e2e_helpers import REPO, Reference, board, cli, events, query, show

from orchestra.store import SQLiteBlackboard

STEPS = ("SELECT s.task_id, s.retry, s.step, s.status, s.attempts, s.finished_at FROM steps s "
         "JOIN tasks t ON t.id = s.task_id WHERE t.run_id = ? ORDER BY s.finished_at")


def copy_store(reference: Reference, tmp_path: Path) -> Path:
    db = tmp_path / "demo.db"
    for suffix in ("", "-wal"):
        source = Path(str(reference.db) + suffix)
        if source.exists():
            shutil.copyfile(source, str(db) + suffix)
    return db


def original_state(db: Path, run_id: str) -> tuple[Any, ...]:
    return (query(db, "SELECT * FROM runs WHERE id = ?", (run_id,)), events(db, run_id),
            query(db, "SELECT * FROM tasks WHERE run_id = ? ORDER BY id", (run_id,)),
            query(db, STEPS, (run_id,)))


async def fork(db: Path, run_id: str, at: int, workspace: Path) -> tuple[str, float]:
    async with await SQLiteBlackboard.open(db) as store:
        source = await store.get_run(run_id)
        made = await store.fork_run(run_id, at, input={**source.input,
                                                       "workspace": str(workspace)})
        return made.id, made.created_at


def rebuild_workspace(db: Path, fork_id: str, workspace: Path) -> None:
    """Write, in commit order, every file a check step the fork holds as done wrote (a
    check's recorded output or rejection data holds each file it wrote): tools act on
    the world, so the fork's workspace must be the one of its event."""
    workspace.mkdir()
    for (output,) in query(
            db, "SELECT s.output FROM steps s JOIN tasks t ON t.id = s.task_id WHERE "
                "t.run_id = ? AND s.name = 'check_output' AND s.status = 'completed' "
                "ORDER BY s.finished_at", (fork_id,)):
        recorded = json.loads(output)
        held = recorded.get("output") or recorded.get("data") or {}
        for path, content in (held.get("files") or {}).items():
            (workspace / path).parent.mkdir(parents=True, exist_ok=True)
            (workspace / path).write_text(content)


def sources(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): p.read_text() for p in root.rglob("*.py")
            if "__pycache__" not in p.parts}


async def results(db: Path, run_id: str) -> list[tuple[str, str, str]]:
    """(role, status, result) of every task, results as the API reads them back."""
    async with await SQLiteBlackboard.open(db) as store:
        return sorted((t.role, t.status, json.dumps(t.result, sort_keys=True))
                      for t in await store.list_tasks(run_id))


@pytest.mark.slow
def test_forks_of_the_demo_at_several_points_end_as_the_original(reference: Reference,
                                                                 tmp_path: Path) -> None:
    db = copy_store(reference, tmp_path)
    run_id = reference.run_id
    before = original_state(db, run_id)
    kinds = [(seq, kind) for seq, kind, _ in events(db, run_id)]
    completions = [seq for seq, kind in kinds if kind == "task.completed"]
    last_step = [seq for seq, kind in kinds if kind == "step.started"][-1]  # the review's
    points = [completions[0], completions[len(completions) // 2], last_step]
    for i, at in enumerate(points):
        workspace = tmp_path / f"ws{i}"
        fork_id, forked_at = asyncio.run(fork(db, run_id, at, workspace))
        rebuild_workspace(db, fork_id, workspace)  # the world as it was at the fork point
        copied = query(db, STEPS, (fork_id,))
        res = cli("resume", fork_id, "--db", db)
        assert res.code == 0 and f"run {fork_id}: completed" in res.stdout, res
        # the rest ran anew, to the same end
        ours, theirs = board(db, fork_id), reference.board
        assert (ours.plans, ours.handoffs, ours.notes) == (theirs.plans, theirs.handoffs,
                                                           theirs.notes)
        assert asyncio.run(results(db, fork_id)) == asyncio.run(results(db, run_id))
        assert sources(workspace) == sources(reference.workspace)
        steps = query(db, STEPS, (fork_id,))
        # what was done by the fork point was replayed, not run again: those rows are the
        # copied ones, unchanged; every other step finished after the fork was made
        assert [s for s in steps if s[5] <= forked_at] == copied
        assert all(s[5] > forked_at and s[4] == 1 for s in steps if s[5] > forked_at)
        assert len(steps) > len(copied) > 0
        assert show(db, fork_id)["steps"]["reissued"] == 0
    assert original_state(db, run_id) == before


def test_the_fork_command(reference: Reference, tmp_path: Path) -> None:
    db = copy_store(reference, tmp_path)
    last = events(db, reference.run_id)[-1][0]
    session = tmp_path / "other.jsonl"
    shutil.copyfile(REPO / "agents" / "demo" / "session.jsonl", session)
    bad_model = cli("fork", reference.run_id, "--at", "5", "--db", db, "--model", "nope:x")
    assert bad_model.code == 2 and query(db, "SELECT COUNT(*) FROM runs") == [(1,)], bad_model
    res = cli("fork", reference.run_id, "--at", "5", "--no-run", "--db", db,
              "--model", f"replay-task:{session}")
    assert res.code == 0 and "forked from" in res.stdout, res
    fork_id = res.stdout.split()[1]
    assert show(db, fork_id)["status"] == "pending"
    assert query(db, "SELECT json_extract(data, '$.model') FROM events WHERE run_id = ? "
                 "AND kind = 'run.settings'", (fork_id,)) == [(f"replay-task:{session}",)]
    res = cli("fork", reference.run_id, "--at", str(last), "--db", db)  # at the end: a copy
    assert res.code == 0 and "(completed)" in res.stdout, res
    bad = cli("fork", reference.run_id, "--at", str(last + 1), "--db", db)
    assert bad.code == 2 and "not one of them" in bad.stderr, bad


def test_the_prune_command(reference: Reference, tmp_path: Path) -> None:
    db = copy_store(reference, tmp_path)
    assert cli("prune", "--db", db).code == 2
    assert cli("prune", "--finished-before", "yesterday", "--db", db).code == 2
    deltas = "SELECT COUNT(*) FROM events WHERE kind = 'model.delta'"
    streamed = query(db, deltas)[0][0]
    assert streamed > 0  # the demo's models stream their answers
    res = cli("prune", "--finished-before", "2000-01-01", "--keep-tokens", "--db", db)
    assert res.code == 0 and "pruned 0 finished run(s)" in res.stdout, res
    assert "folded" not in res.stdout and query(db, deltas)[0][0] == streamed
    res = cli("prune", "--finished-before", "2000-01-01", "--db", db)
    assert res.code == 0 and "pruned 0 finished run(s)" in res.stdout, res
    # every call of the demo completed its step: the steps hold all their answers
    assert f"{streamed} token event(s) folded into their steps" in res.stdout, res
    assert query(db, deltas) == [(0,)]
    assert show(db, reference.run_id)["status"] == "completed"
    res = cli("prune", "--keep", "0", "--vacuum", "--db", db, "--json")
    assert res.code == 0, res
    assert query(db, "SELECT COUNT(*) FROM runs") == [(0,)]
    assert query(db, "SELECT COUNT(*) FROM messages") == [(0,)]
