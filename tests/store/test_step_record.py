"""A task's usual end as one appended record writes exactly the rows of the general path.

``step`` hands a task in as ONE insert into the ``step_records`` view, whose
trigger maintains the tables inside SQLite. Each scenario here runs twice on fresh
stores, once through the record and once with the record path switched off, with the
same ids, and compares every row of every table the end touches (timestamps aside).
"""

from __future__ import annotations

import itertools
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from orchestra._errors import LeaseLostError, StoreError
from orchestra._types import Message, ToolCallRecord
from orchestra.store import (
    ClaimSpec,
    Lease,
    NewHandoff,
    NewNote,
    NewTask,
    SQLiteBlackboard,
    StepResult,
    Writes,
    rules,
)
from orchestra.store import codec as _codec
from orchestra.store.sqlite import board as _board
from orchestra.store.sqlite import runs as _runs
from orchestra.store.sqlite import step as _step_record
from orchestra.store.sqlite import tasks as _tasks

_TIMES = {"created_at", "updated_at", "started_at", "finished_at", "at", "lease_expires_at",
          "seen_at", "expires_at"}
_TABLES = {"runs": "id", "tasks": "id", "steps": "task_id, retry, step",
           "messages": "agent_id, seq", "agents": "id", "events": "run_id, seq",
           "notes": "id"}
REPLY = json.dumps({"module": "m", "version": 1, "text": "x" * 120})

Scenario = Callable[[SQLiteBlackboard], Any]


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


async def _both(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scenario: Scenario,
                ) -> tuple[Any, Any, dict[str, Any], dict[str, Any]]:
    """Run ``scenario`` through the record and through the general path, ids equal."""
    results = []
    RECORDED.clear()
    for name, record in (("record", True), ("general", False)):
        counter = itertools.count(1)

        def new_id(length: int = 16, counter: Any = counter) -> str:
            return f"{next(counter):0{length}d}"

        for module in (_codec, _tasks, _board, _runs):
            monkeypatch.setattr(module, "new_id", new_id)
        fits = rules.fits if record else (lambda *a: False)
        monkeypatch.setattr(rules, "fits", fits)
        monkeypatch.setattr(_step_record, "complete_and_claim", _spy)
        monkeypatch.setattr(_step_record, "record_row", _spy_row)
        async with await SQLiteBlackboard.open(tmp_path / f"{name}.db") as store:
            results.append(await scenario(store))
        monkeypatch.undo()
    return (results[0], results[1], _dump(tmp_path / "record.db"),
            _dump(tmp_path / "general.db"))


RECORDED: list[bool] = []  # per end through the record path: written as a record or not
_complete_and_claim = _step_record.complete_and_claim


_record_row = _step_record.record_row


async def _spy(*args: Any) -> Any:
    claimed = await _complete_and_claim(*args)
    RECORDED.append(claimed is not None)
    return claimed


def _spy_row(*args: Any) -> Any:
    """A row inserted with its batch's is a record too (a row declined or refused goes
    on to ``complete_and_claim``)."""
    row = _record_row(*args)
    if row is None:
        return None

    def done() -> Any:
        RECORDED.append(True)
        return row.done()

    return row._replace(done=done)


async def _start(store: SQLiteBlackboard, *older: str) -> tuple[str, Lease]:
    """Run ``r1`` with a coder task claimed by worker-1 (and ``older`` pending tasks), made
    by another process (so the store reads the agent's last seq before its first record)."""
    async with await SQLiteBlackboard.open(store.path) as maker:
        await maker.create_run("p", {"goal": 1}, run_id="r1",
                               tasks=[NewTask("coder", {"n": 1}),
                                      *(NewTask(r, {}) for r in older)])
    [task] = await store.claim_tasks("worker-1", capacity={"coder": 1}, limit=1, run_id="r1")
    return task.id, Lease("worker-1", task.attempt)


def _step(task_id: str, text: str = REPLY) -> StepResult:
    return StepResult(task_id, 0, 1, "model", "model", "2:abc",
                      {"text": text, "calls": [], "finish": "stop", "usage": [11, 7]},
                      tokens_in=11, tokens_out=7, cost=0.5)


def _claim(**capacity: int) -> ClaimSpec:
    return ClaimSpec("worker-1", dict(capacity), sum(capacity.values()), "r1")


def _messages() -> list[Message]:
    return [Message("user", "review module m " * 10, name="task"),
            Message("assistant", "calling a tool", (ToolCallRecord("c1", "read", '{"p": 1}'),)),
            Message("tool", "file body", tool_call_id="c1", name="read"),
            Message("assistant", REPLY)]


async def test_a_routed_end_writes_the_general_paths_rows(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Messages (with tool calls), the reply stored once, the result pointing at the
    reply, two handoffs of which the claim has room for one."""

    async def scenario(store: SQLiteBlackboard) -> list[tuple[str, str, int]]:
        task_id, lease = await _start(store)
        writes = Writes(messages=_messages(), handoffs=[
            NewHandoff("reviewer", {"module": "m"}, note="look"),
            NewHandoff("reviewer", {"module": "n"}, max_attempts=5)])
        claimed = await store.complete_task(
            task_id, lease, json.loads(REPLY), agent_id="r1/coder", claim=_claim(reviewer=1),
            writes=writes, step=_step(task_id))
        [stored] = await store.get_steps(task_id, 0)
        assert stored.output["text"] == REPLY  # the pointer reads back as the text
        assert (await store.get_task(task_id)).result == json.loads(REPLY)
        return [(t.role, t.status, t.attempt) for t in claimed]

    got, want, rows, general = await _both(tmp_path, monkeypatch, scenario)
    assert RECORDED == [True]  # the first run wrote a record; the second never tried
    assert got == want == [("reviewer", "running", 1)]
    assert rows == general
    assert [e["kind"] for e in rows["events"]][-5:] == [
        "handoff.posted", "handoff.posted", "step.completed", "task.completed", "task.claimed"]
    assert any(t["result_msg"] is not None for t in rows["tasks"])  # stored once, both ways


@pytest.mark.parametrize("case", ["no writes", "no claim room", "result is not the reply",
                                  "older pending work", "a NUL in a tool result"])
async def test_other_ends_write_the_same_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              case: str) -> None:
    async def scenario(store: SQLiteBlackboard) -> list[str]:
        older = ("reviewer",) if case == "older pending work" else ()
        task_id, lease = await _start(store, *older)
        messages, note = _messages(), ""
        if case == "a NUL in a tool result":  # e.g. a binary file read by a tool
            messages[2] = Message("tool", "head\x00tail \U0001f600", tool_call_id="c1",
                                  name="read")
            note = "a\x00b"
        writes = None if case == "no writes" else Writes(
            messages=messages, handoffs=[NewHandoff("reviewer", {"module": "m"}, note=note)])
        result = {"other": True} if case == "result is not the reply" else json.loads(REPLY)
        claim = _claim() if case == "no claim room" else _claim(reviewer=2)
        claimed = await store.complete_task(
            task_id, lease, result, agent_id="r1/coder", claim=claim, writes=writes,
            step=_step(task_id))
        return [t.id for t in claimed]

    got, want, rows, general = await _both(tmp_path, monkeypatch, scenario)
    assert RECORDED == [case not in ("older pending work", "a NUL in a tool result")]
    assert got == want
    assert rows == general
    if case == "a NUL in a tool result":
        assert "head\x00tail \U0001f600" in [m["content"] for m in rows["messages"]]


async def test_ends_the_record_cannot_carry_take_the_general_path(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A note (or a plan, a keyed handoff, a failed step...) is not in the record; such an
    end is written the general way, whole."""
    writes = Writes(messages=_messages(), notes=[NewNote("found it")])
    assert not rules.fits(writes, _step("t"), "t")
    assert not rules.fits(Writes(handoffs=[NewHandoff("r", {}, key="k")]),
                                 _step("t"), "t")
    assert not rules.fits(None, None, "t")
    assert rules.fits(Writes(messages=_messages()), _step("t"), "t")

    async def scenario(store: SQLiteBlackboard) -> None:
        task_id, lease = await _start(store)
        await store.complete_task(task_id, lease, {}, agent_id="r1/coder",
                                            claim=_claim(), writes=writes, step=_step(task_id))

    _, _, rows, general = await _both(tmp_path, monkeypatch, scenario)
    assert rows == general and len(rows["notes"]) == 1


async def test_a_lost_lease_or_a_completed_step_writes_nothing(db_path: Path) -> None:
    async with await SQLiteBlackboard.open(db_path) as store:
        task_id, lease = await _start(store)
        before = _dump(db_path)
        with pytest.raises(LeaseLostError):
            await store.complete_task(
                task_id, Lease("worker-2", lease.attempt), {}, agent_id="r1/coder",
                claim=_claim(reviewer=1), writes=Writes(messages=_messages()),
                step=_step(task_id))
        await store.complete_step(_step(task_id), lease, agent_id="r1/coder")
        mid = _dump(db_path)
        with pytest.raises(StoreError, match="already completed"):
            await store.complete_task(
                task_id, lease, {}, agent_id="r1/coder", claim=_claim(reviewer=1),
                writes=Writes(messages=_messages(), handoffs=[NewHandoff("reviewer", {})]),
                step=_step(task_id))
        assert _dump(db_path) == mid != before
        assert (await store.get_task(task_id)).status == "running"
