"""One readable schema: ``schema.sql`` is what the migrations produce, old files (written by
the code of their time, ``fixtures/``) migrate with their data, and the CHECK lists are
the vocabulary of ``orchestra._types``."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from store_helpers import fts_consistent, query

from orchestra._entries import PUBLIC
from orchestra._types import (
    APPROVAL_STATUSES,
    MESSAGE_ROLES,
    RUN_STATUSES,
    STEP_KINDS,
    STEP_STATUSES,
    TASK_STATUSES,
)
from orchestra.store import NewNote, SQLiteBlackboard
from orchestra.store.sqlite import schema

FIXTURES = Path(__file__).with_name("fixtures")


def shape(path: Path) -> dict[str, Any]:
    """Every table's columns, indexes and foreign keys; views' and triggers' SQL."""
    conn = sqlite3.connect(path)
    try:
        out: dict[str, Any] = {}
        for kind, name, sql in conn.execute(
                "SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' "
                "ORDER BY name"):
            if kind == "table":
                indexes = sorted(
                    (row[1], row[2], row[4], tuple(c[2] for c in conn.execute(
                        f"PRAGMA index_info('{row[1]}')")))
                    for row in conn.execute(f"PRAGMA index_list('{name}')"))
                out[name] = (conn.execute(f"PRAGMA table_xinfo('{name}')").fetchall(), indexes,
                             conn.execute(f"PRAGMA foreign_key_list('{name}')").fetchall())
            elif kind in ("view", "trigger"):
                out[name] = " ".join(sql.split())
            elif kind == "index" and sql is not None:  # partial indexes: their WHERE
                out[name] = " ".join(sql.split()).split(" WHERE ")[-1] if " WHERE " in sql \
                    else "-"
        return out
    finally:
        conn.close()


def test_schema_sql_is_what_the_migrations_build(tmp_path: Path) -> None:
    fresh, migrated = tmp_path / "fresh.db", tmp_path / "migrated.db"
    for path, scripts in ((fresh, schema.MIGRATIONS), (migrated, list(schema.MIGRATIONS))):
        conn = sqlite3.connect(path, isolation_level=None)
        # the same list by value but not by identity: migrate runs every script in turn
        assert schema.migrate(conn, str(path), migrations=scripts) == schema.LATEST_VERSION
        conn.close()
    assert query(fresh, "SELECT version FROM orchestra_schema") == [(schema.LATEST_VERSION,)]
    assert shape(fresh) == shape(migrated)
    assert "notes_fts" in shape(fresh) and "handoffs" in shape(fresh)


def test_check_lists_are_the_vocabulary() -> None:
    lists = re.findall(r"CHECK \((\w+) IN \(([^)]*)\)", schema.CURRENT)  # not an index's
    found = {(column, tuple(v.strip().strip("'") for v in values.split(",")))
             for column, values in lists if "'" in values}
    assert found == {("status", RUN_STATUSES), ("status", TASK_STATUSES),
                     ("role", MESSAGE_ROLES), ("kind", STEP_KINDS),
                     ("status", STEP_STATUSES), ("status", APPROVAL_STATUSES)}


@pytest.mark.parametrize("version", [1, 2, 3])
async def test_files_of_every_version_migrate_with_their_data(version: int,
                                                              tmp_path: Path) -> None:
    path = tmp_path / f"v{version}.db"
    shutil.copyfile(FIXTURES / f"v{version}.db", path)
    assert query(path, "SELECT version FROM orchestra_schema") == [(version,)]
    async with await SQLiteBlackboard.open(path) as store:
        run = await store.get_run("run1")
        assert (run.status, run.pipeline, run.input) == ("failed", "fixture", {"goal": "g"})
        arch, coder = await store.list_tasks("run1")
        assert (arch.role, arch.status, coder.role, coder.status) == (
            "architect", "completed", "coder", "failed")
        assert arch.result["files"] == ["a.py"]  # stored once (v2+) or whole (v1): same read
        [step1, step2] = await store.get_steps(arch.id, 0)
        assert step1.output == {"text": "x" * 80} and step2.output["text"].startswith('{"files"')
        [handoff] = await store.get_handoffs("run1")
        assert (handoff.to_role, handoff.payload, handoff.note, handoff.task_id) == (
            "coder", {"module": "a"}, "go", coder.id)
        assert [m.seq for m in await store.get_messages("run1/architect")] == [1, 2, 3, 4]
        [old] = await store.search_notes("run1", text="sqlite")
        assert (old.body, old.scope) == ("sqlite stores the board", PUBLIC)  # as before v13
        assert [a.status for a in await store.list_approvals("run1")] == ["approved"]
        assert len(await store.get_compactions("run1/architect")) == 1
        assert [p.body for p in await store.get_plans("run1")] == [{"modules": ["a"]}]
        events = await store.events("run1")
        assert [e.seq for e in events] == list(range(1, run.last_seq + 1))
        # and it takes new writes, a run status newer than the file too (v5 rebuilt runs)
        await store.post_note("run1", "me", NewNote("after"))
        assert (await store.set_run_status("run1", "paused")).status == "paused"
    assert query(path, "SELECT version FROM orchestra_schema") == [(schema.LATEST_VERSION,)]
    assert shape(path) == shape(_fresh(tmp_path))
    assert fts_consistent(path)
    assert query(path, "PRAGMA foreign_key_check") == []  # every row still points at its run
    assert json.loads(query(path, "SELECT data FROM events ORDER BY seq DESC LIMIT 1")[0][0])


def _fresh(tmp_path: Path) -> Path:
    path = tmp_path / "fresh.db"
    conn = sqlite3.connect(path, isolation_level=None)
    schema.migrate(conn, str(path))
    conn.close()
    return path
