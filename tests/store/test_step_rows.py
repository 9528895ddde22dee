"""A step's start, and a step's end that writes nothing else, as one row each, write
exactly the rows of the general path.

``step_rows`` makes each one insert into a view (``step_starts``, ``step_ends``) whose
trigger maintains the tables inside SQLite. Each scenario runs twice on fresh stores,
once through the rows and once with the rows switched off, and compares every row of
every table a step touches (timestamps aside).
"""

from __future__ import annotations

import itertools
import json
import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from orchestra._errors import LeaseLostError, StoreError
from orchestra.store import Lease, NewTask, SQLiteBlackboard, StepResult, Writes
from orchestra.store import codec as _codec
from orchestra.store.sqlite import board as _board
from orchestra.store.sqlite import runs as _runs
from orchestra.store.sqlite import step_rows
from orchestra.store.sqlite import tasks as _tasks

_TIMES = {"created_at", "updated_at", "started_at", "finished_at", "at", "lease_expires_at"}
_TABLES = {"runs": "id", "tasks": "id", "steps": "task_id, retry, step", "agents": "id",
           "events": "run_id, seq", "messages": "agent_id, seq"}

Scenario = Callable[[SQLiteBlackboard, str, Lease], Awaitable[Any]]


def _dump(path: Path) -> dict[str, list[dict[str, Any]]]:
    conn = sqlite3.connect(path)
    out = {}
    for table, order in _TABLES.items():
        cur = conn.execute(f"SELECT * FROM {table} ORDER BY {order}")
        names = [d[0] for d in cur.description]
        out[table] = [{n: v for n, v in zip(names, row, strict=True) if n not in _TIMES}
                      for row in cur.fetchall()]
    conn.close()
    return out


async def _both(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scenario: Scenario
                ) -> tuple[list[str], dict[str, Any], dict[str, Any]]:
    """Run ``scenario`` on a claimed task through the rows and the general way; returns
    the rows inserted (by view) and both stores' tables."""
    inserted: list[str] = []
    for name, rows in (("rows", True), ("general", False)):
        counter = itertools.count(1)
        for module in (_codec, _tasks, _board, _runs):  # the same ids both ways
            monkeypatch.setattr(module, "new_id", lambda n=16, c=counter: f"{next(c):0{n}d}")
        for maker in ("start_row", "end_row"):
            real = getattr(step_rows, maker)

            def spy(*args: Any, real: Any = real, maker: str = maker, on: bool = rows) -> Any:
                row = real(*args) if on else None
                if row is None:
                    return None
                return row._replace(done=lambda: inserted.append(maker) or row.done())

            monkeypatch.setattr(step_rows, maker, spy)
        async with await SQLiteBlackboard.open(tmp_path / f"{name}.db") as store:
            await store.create_run("p", {}, run_id="r1", tasks=[NewTask("coder", {})])
            task = await store.claim_task("w1", run_id="r1")
            assert task is not None
            await scenario(store, task.id, Lease("w1", task.attempt))
        monkeypatch.undo()
    return inserted, _dump(tmp_path / "rows.db"), _dump(tmp_path / "general.db")


def _text(data: dict[str, Any]) -> str:
    return json.dumps(data, separators=(",", ":"))


def _result(task_id: str, step: int, **kw: Any) -> StepResult:
    kind = kw.pop("kind", "tool")
    return StepResult(task_id, 0, step, kind, kw.pop("name", "peek"), "d1", **kw)


async def test_starts_and_ends_write_the_general_paths_rows(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async def scenario(store: SQLiteBlackboard, task_id: str, lease: Lease) -> None:
        # a tool as the task's first step (its attempts count the claims), then a model
        # call's start (no event), a failed tool, a step started twice (a reissue), and
        # a start arriving after its step's end (ignored)
        await store.start_step(task_id, 0, 1, "tool", "peek", "d1", lease)
        await store.complete_step(_result(task_id, 1, output={"content": "ü \U0001f600",
                                                              "is_error": False}),
                                  lease, agent_id="r1/coder")
        await store.start_step(task_id, 0, 2, "model", "model", "d2", lease)
        await store.start_step(task_id, 0, 3, "tool", "poke", "d3", lease)
        await store.complete_step(_result(task_id, 3, name="poke", error="ValueError: no"),
                                  lease, agent_id="r1/coder", writes=Writes())
        await store.start_step(task_id, 0, 4, "tool", "peek", "d4", lease)
        await store.start_step(task_id, 0, 4, "tool", "peek", "d4", lease)
        await store.complete_step(_result(task_id, 4, output=[1, 2], tokens_in=3,
                                          tokens_out=4, cost=0.25), lease, agent_id="r1/coder")
        await store.start_step(task_id, 0, 4, "tool", "peek", "d4", lease)

    inserted, rows, general = await _both(tmp_path, monkeypatch, scenario)
    assert inserted == ["start_row", "end_row", "start_row", "start_row", "end_row",
                        "start_row", "start_row", "end_row", "start_row"]
    assert rows == general
    task = rows["tasks"][0]["id"]
    step4 = {"task": task, "step": 4, "kind": "tool", "name": "peek"}
    kinds = [(e["kind"], e["data"]) for e in rows["events"] if e["kind"].startswith("step.")]
    assert kinds[-3:] == [  # the JSON text itself, as the general path encodes it
        ("step.started", _text(step4 | {"attempt": 1})),
        ("step.started", _text(step4 | {"attempt": 2})),
        ("step.completed", _text(step4 | {"tokens_in": 3, "tokens_out": 4}))]
    assert [(s["step"], s["status"], s["attempts"]) for s in rows["steps"]] == [
        (1, "completed", 1), (2, "started", 1), (3, "failed", 1), (4, "completed", 2)]
    assert rows["runs"][0]["steps"] == 3 and rows["runs"][0]["cost"] == 0.25


async def test_a_lost_lease_or_a_completed_step_is_refused_as_before(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async def scenario(store: SQLiteBlackboard, task_id: str, lease: Lease) -> None:
        await store.complete_step(_result(task_id, 1, output="x"), lease, agent_id="r1/coder")
        with pytest.raises(StoreError, match="already completed"):
            await store.complete_step(_result(task_id, 1, output="y"), lease,
                                      agent_id="r1/coder")
        await store.start_step(task_id, 0, 2, "tool", "peek", "d2", lease)  # rows still
        stale = Lease("w1", lease.attempt + 1)
        with pytest.raises(LeaseLostError):
            await store.start_step(task_id, 0, 3, "tool", "peek", "d3", stale)
        with pytest.raises(LeaseLostError):
            await store.complete_step(_result(task_id, 2, output="z"), stale,
                                      agent_id="r1/coder")

    inserted, rows, general = await _both(tmp_path, monkeypatch, scenario)
    assert inserted == ["end_row", "start_row"]
    assert rows == general
    assert [s["output"] for s in rows["steps"]] == ['"x"', None]
