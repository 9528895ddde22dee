"""A task result equal to its final reply is stored once (schema v2), and reads the same."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from store_helpers import Claim, query

from orchestra._types import JSON, Message
from orchestra.store import SQLiteBlackboard, StepResult, Writes
from orchestra.store.sqlite import schema

PAD = "x" * 80


async def _finish(store: SQLiteBlackboard, claimed: Claim, reply: str, result: JSON) -> str:
    run, task, lease = await claimed()
    step = StepResult(task.id, 0, 1, "model", "model", "d", output={"text": reply})
    writes = Writes(messages=[Message("user", "q"), Message("assistant", reply)])
    await store.complete_task(task.id, lease, result, agent_id=f"{run.id}/coder",
                              writes=writes, step=step)
    assert (await store.get_task(task.id)).result == result
    return task.id


@pytest.mark.parametrize(("reply", "result", "stored_once"), [
    ('{"a": 1, "text": "' + PAD + '"}', {"a": 1, "text": PAD}, True),
    ('{"text": "' + PAD + '", "a": 1}', {"a": 1, "text": PAD}, True),  # key order is free
    ('{"a": 1.0, "text": "' + PAD + '"}', {"a": 1, "text": PAD}, False),  # 1.0 is not 1
    ('{"a": true, "text": "' + PAD + '"}', {"a": 1, "text": PAD}, False),  # nor is true
    ('{"a": 1, "text": "' + PAD + '"}', {"a": 1, "text": PAD, "b": None}, False),
    ("Here it is: " + PAD, {"a": 1}, False),
])
async def test_result_reads_back_whether_or_not_it_is_stored_once(
        store: SQLiteBlackboard, claimed: Claim, db_path: Path, reply: str, result: JSON,
        stored_once: bool) -> None:
    task_id = await _finish(store, claimed, reply, result)
    got = await store.get_task(task_id)
    assert got is not None and json.dumps(got.result, sort_keys=True) == json.dumps(
        result, sort_keys=True)
    (raw, pointer), = query(db_path, "SELECT result, result_msg FROM tasks WHERE id = ?", task_id)
    assert (raw is None and pointer is not None) == stored_once
    listed = [t for t in await store.list_tasks(got.run_id) if t.id == task_id]
    assert listed[0].result == got.result


async def test_a_version_1_file_is_migrated_and_its_results_still_read(tmp_path: Path) -> None:
    path = tmp_path / "v1.db"
    conn = sqlite3.connect(path, isolation_level=None)
    assert schema.migrate(conn, str(path), migrations=schema.MIGRATIONS[:1]) == 1
    conn.execute("INSERT INTO runs (id, pipeline, input, status, created_at, updated_at) "
                 "VALUES ('r', 'p', '{}', 'completed', 0, 0)")
    conn.execute("INSERT INTO tasks (id, run_id, role, input, status, result, created_at, "
                 "updated_at) VALUES ('t', 'r', 'coder', '{}', 'completed', '{\"ok\": 1}', 0, 0)")
    conn.close()
    async with await SQLiteBlackboard.open(path) as store:
        task = await store.get_task("t")
        assert task is not None and task.result == {"ok": 1}
    assert query(path, "SELECT version FROM orchestra_schema") == [(schema.LATEST_VERSION,)]
