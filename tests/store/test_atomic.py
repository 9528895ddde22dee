"""Atomicity: a change, the rows it creates and its event commit together or not at all."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest
from store_helpers import Claim, count_rows, query

from orchestra._errors import LeaseLostError, PayloadTooLargeError, UserError
from orchestra._types import Message
from orchestra.store import (
    Lease,
    NewHandoff,
    NewNote,
    NewTask,
    SQLiteBlackboard,
    StepResult,
    Writes,
)


async def test_failure_inside_the_txn_leaves_no_handoff_task_or_event(
        tmp_path: Path) -> None:
    path = tmp_path / "board.db"
    store = await SQLiteBlackboard.open(path, max_payload_bytes=1000)
    run = await store.create_run("p", {}, tasks=[NewTask("architect", {})])
    task = await store.claim_task("w")
    assert task is not None
    lease = Lease("w", task.attempt)
    before = count_rows(path)
    # The handoff (and its task) are written first; the oversize note after them fails.
    writes = Writes(messages=[Message("assistant", "handing off")],
                    handoffs=[NewHandoff("coder", {"module": "a"}, "go")],
                    notes=[NewNote("x" * 2000)])
    result = StepResult(task.id, 0, 1, "model", "m", "d", output={"ok": True})
    with pytest.raises(PayloadTooLargeError) as caught:
        await store.complete_step(result, lease, agent_id=f"{run.id}/architect", writes=writes)
    message = str(caught.value)
    assert "2000 bytes" in message and "1000 bytes" in message and "note body" in message
    assert count_rows(path) == before
    assert await store.get_handoffs(run.id) == []
    assert await store.list_tasks(run.id, role="coder") == []
    assert await store.get_steps(task.id, 0) == []
    assert [e.kind for e in await store.events(run.id)] == ["run.created", "task.created",
                                                            "task.claimed"]
    assert (await store.get_run(run.id)).last_seq == 3  # no seq was burnt
    await store.close()


@pytest.mark.parametrize("field", ["task input", "plan", "message", "result", "event"])
async def test_payload_over_the_limit_is_refused_with_size_and_limit(tmp_path: Path,
                                                                     field: str) -> None:
    path = tmp_path / "board.db"
    store = await SQLiteBlackboard.open(path, max_payload_bytes=100)
    run = await store.create_run("p", {})
    big = "é" * 60  # 60 characters, 120 bytes: the limit counts encoded bytes
    before = count_rows(path)
    with pytest.raises(PayloadTooLargeError, match=r"over the store's limit of 100 bytes"):
        if field == "task input":
            await store.add_tasks(run.id, [NewTask("a", {"x": big})])
        elif field == "plan":
            await store.post_plan(run.id, "a", [big])
        elif field == "event":
            await store.append_event(run.id, "custom", big)
        else:
            await store.add_tasks(run.id, [NewTask("a", {})])
            task = await store.claim_task("w")
            assert task is not None
            lease = Lease("w", task.attempt)
            before = count_rows(path)
            if field == "message":
                await store.fail_task(task.id, lease, "e", agent_id="a",
                                      writes=Writes(messages=[Message("user", big)]))
            else:
                await store.complete_task(task.id, lease, big, agent_id="a")
    assert count_rows(path) == before
    await store.close()


async def test_one_bad_op_in_a_batch_fails_alone(store: SQLiteBlackboard) -> None:
    run = await store.create_run("p", {})
    ops = [store.append_event(run.id, "ok", {"i": i}) for i in range(20)]
    ops.insert(10, store.append_event(run.id, "bad", {1, 2}))  # a set is not JSON
    results = await asyncio.gather(*ops, return_exceptions=True)
    assert isinstance(results[10], UserError)
    assert sum(1 for r in results if not isinstance(r, BaseException)) == 20
    kinds = [e.kind for e in await store.events(run.id)]
    assert kinds == ["run.created"] + ["ok"] * 20
    assert [e.seq for e in await store.events(run.id)] == list(range(1, 22))


async def test_a_cancelled_caller_never_leaves_half_a_write(store: SQLiteBlackboard,
                                                            claimed: Claim) -> None:
    run, task, lease = await claimed()
    agent = f"{run.id}/coder"
    calls = []
    for step in range(1, 41):
        writes = Writes(messages=[Message("user", f"q{step}"), Message("assistant", f"a{step}")])
        result = StepResult(task.id, 0, step, "model", "m", "d", output=step)
        calls.append(asyncio.ensure_future(store.complete_step(result, lease, agent_id=agent,
                                                               writes=writes)))
    await asyncio.sleep(0)
    for call in calls[5::3]:
        call.cancel()
    await asyncio.gather(*calls, return_exceptions=True)
    steps = {s.step for s in await store.get_steps(task.id, 0)}
    messages = await store.get_messages(agent)
    completed_events = {e.data["step"] for e in await store.events(run.id)
                        if e.kind == "step.completed"}
    assert steps == completed_events
    assert sorted(int(m.content[1:]) for m in messages) == sorted(list(steps) * 2)
    assert len(steps) >= 40 - len(calls[5::3])  # only cancelled calls may be missing


async def test_lease_check_writes_nothing(store: SQLiteBlackboard, claimed: Claim,
                                          db_path: Path) -> None:
    _run, task, lease = await claimed()
    await store.release_leases(owners=["worker-1"])
    before = count_rows(db_path)
    result = StepResult(task.id, 0, 1, "model", "m", "d")
    with pytest.raises(LeaseLostError, match=task.id):
        await store.complete_step(result, lease, agent_id="a",
                                  writes=Writes(notes=[NewNote("n")]))
    assert count_rows(db_path) == before
    assert query(db_path, "SELECT COUNT(*) FROM notes") == [(0,)]


async def test_a_cancelled_caller_whose_write_was_taken_commits_it_whole_and_strands_nobody(
        store: SQLiteBlackboard, db_path: Path) -> None:
    run = await store.create_run("p", {})
    other = sqlite3.connect(db_path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # the writer thread will wait in busy_timeout
    try:
        leader = asyncio.ensure_future(store.append_event(run.id, "leader", {}))
        await _taken(store)  # the writer thread took the leader's write and waits
        queued = [asyncio.ensure_future(store.append_event(run.id, "queued", {"i": i}))
                  for i in range(5)]
        dropped = asyncio.ensure_future(store.append_event(run.id, "dropped", {}))
        await asyncio.sleep(0)
        leader.cancel()
        dropped.cancel()  # not taken yet: it is dropped, nothing written
    finally:
        other.execute("COMMIT")
        other.close()
    events = await asyncio.wait_for(asyncio.gather(*queued), 10.0)
    assert [e.data["i"] for e in events] == list(range(5))
    for cancelled in (leader, dropped):
        with pytest.raises(asyncio.CancelledError):
            await cancelled
    # The leader's write had been taken, so it committed as a unit; ``dropped`` had not.
    assert [e.kind for e in await store.events(run.id)] == ["run.created", "leader"] + [
        "queued"] * 5


async def _taken(store: SQLiteBlackboard) -> None:
    """Until the writer thread has taken every queued write."""
    for _ in range(1000):
        await asyncio.sleep(0.01)  # (first: the caller's coroutine queues its write)
        if not store.stats().queued_writes:
            return
    raise AssertionError("the writer thread never took the write")
