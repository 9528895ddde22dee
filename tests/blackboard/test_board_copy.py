"""``orchestra copy`` carries a run's board entries and consumptions to another store
(SQLite or PostgreSQL), in order, with their scopes, and the copied run goes on."""

from __future__ import annotations

from pathlib import Path

from blackboard_helpers import open_spec

from examples.research_board import build
from orchestra import Coordinator, SQLiteBlackboard
from orchestra.store.copy import copy_runs


async def test_a_copied_run_keeps_its_board(tmp_path: Path, store_spec: str) -> None:
    source = tmp_path / "source.db"
    async with await SQLiteBlackboard.open(source) as store:
        run = await Coordinator(store, build({})).run({"subject": "tides"})
        entries = await store.get_entries(run.id)
        consumed = await store.get_consumptions(run.id)
    await copy_runs(source, store_spec)
    target = await open_spec(store_spec)
    try:
        copied = await target.get_entries(run.id)
        assert [(e.id, e.type, e.author, e.scope, e.body, e.task_id) for e in copied] == \
            [(e.id, e.type, e.author, e.scope, e.body, e.task_id) for e in entries]
        assert sorted((c.trigger, c.role, c.task_id) for c in
                      await target.get_consumptions(run.id)) == \
            sorted((c.trigger, c.role, c.task_id) for c in consumed)
    finally:
        await target.close()
