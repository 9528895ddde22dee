"""Retention: deleting a finished run removes every row it owns, and only those."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from store_helpers import TABLES, count_rows, fts_consistent, query

from orchestra._errors import UserError
from orchestra._types import CompactionRecord, Message, RunStatus
from orchestra.store import (
    Lease,
    NewHandoff,
    NewNote,
    NewTask,
    SQLiteBlackboard,
    StepResult,
    Writes,
)


async def populate(store: SQLiteBlackboard) -> str:
    """A run with a row in every table."""
    run = await store.create_run("p", {"goal": 1}, tasks=[NewTask("coder", {})])
    task = await store.claim_task("w", run_id=run.id)
    assert task is not None
    lease = Lease("w", task.attempt)
    agent = f"{run.id}/coder"
    await store.start_step(task.id, 0, 1, "model", "m", "d", lease)
    await store.complete_step(
        StepResult(task.id, 0, 1, "model", "m", "d", output="x"), lease, agent_id=agent,
        writes=Writes(messages=[Message("user", "hi")], plans=[{"p": 1}],
                      handoffs=[NewHandoff("reviewer", {})], notes=[NewNote("retained words")],
                      compactions=[CompactionRecord(agent, 1, 1, "s")]))
    await store.request_approval(task.id, lease, retry=0, step=2, tool="t", arguments={})
    return run.id


async def test_delete_run_removes_everything_it_owns(store: SQLiteBlackboard,
                                                     db_path: Path) -> None:
    doomed = await populate(store)
    kept = await populate(store)
    assert all(n > 0 for n in count_rows(db_path, doomed).values())
    kept_counts = count_rows(db_path, kept)
    await store.set_run_status(doomed, "cancelled")
    await store.delete_run(doomed)
    assert count_rows(db_path, doomed) == dict.fromkeys(TABLES, 0)
    assert count_rows(db_path, kept) == kept_counts
    assert count_rows(db_path) == kept_counts  # nothing orphaned anywhere
    assert fts_consistent(db_path)
    assert [n.run_id for n in await store.search_notes(text="retained")] == [kept]


async def test_delete_refuses_a_live_run(store: SQLiteBlackboard, db_path: Path) -> None:
    run_id = await populate(store)
    statuses: tuple[RunStatus, ...] = ("pending", "running", "waiting")
    for status in statuses:
        await store.set_run_status(run_id, status)
        before = count_rows(db_path)
        with pytest.raises(UserError, match=f"run {run_id} is {status}; cancel it first"):
            await store.delete_run(run_id)
        assert count_rows(db_path) == before


async def test_prune_leaves_no_row_or_fts_entry_and_vacuum_shrinks_the_file(
        store: SQLiteBlackboard, db_path: Path) -> None:
    doomed = [await populate(store) for _ in range(3)]
    kept = await populate(store)
    for run_id in doomed:
        await store.set_run_status(run_id, "completed")
    await store.post_note(doomed[0], "x", NewNote("padding " * 20_000))
    kept_counts = count_rows(db_path, kept)
    assert query(db_path, "SELECT COUNT(*) FROM notes_fts")[0][0] == 5
    size = disk_size(db_path)
    pruned = await store.prune_runs(finished_before=9e12, batch_rows=2, vacuum=True)
    assert sorted(pruned.runs) == sorted(doomed)
    for run_id in doomed:
        assert count_rows(db_path, run_id) == dict.fromkeys(TABLES, 0)
    assert count_rows(db_path) == kept_counts  # nothing orphaned, the live run untouched
    assert query(db_path, "SELECT COUNT(*) FROM notes_fts")[0][0] == 1  # FTS entries gone
    assert query(db_path, "SELECT rowid FROM notes_fts WHERE notes_fts MATCH 'padding'") == []
    assert fts_consistent(db_path)
    assert pruned.freed_bytes > 100_000 and disk_size(db_path) < size - 100_000


def disk_size(path: Path) -> int:
    wal = path.with_name(path.name + "-wal")
    return path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)


async def test_prune_deletes_from_tables_added_later(store: SQLiteBlackboard,
                                                     db_path: Path) -> None:
    doomed = await populate(store)
    await store.set_run_status(doomed, "failed")
    conn = sqlite3.connect(db_path)
    with conn:  # e.g. a migration adds a table of per-run rows
        conn.execute("CREATE TABLE later (run_id TEXT NOT NULL REFERENCES runs (id), x INT)")
        conn.execute("INSERT INTO later VALUES (?, 1)", (doomed,))
    conn.close()
    assert (await store.prune_runs(keep=0)).runs == [doomed]
    assert query(db_path, "SELECT COUNT(*) FROM later") == [(0,)]
