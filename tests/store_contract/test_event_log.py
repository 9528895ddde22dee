"""EventLog: gap-free per-run seqs under concurrent writers, cursors, follow; payload limits."""

from __future__ import annotations

import asyncio

import pytest
from backends import Claimed, Opener

from orchestra._errors import NotFoundError, PayloadTooLargeError, UserError
from orchestra._types import Event, Message
from orchestra.store import (
    Blackboard,
    Lease,
    NewNote,
    NewTask,
    StepResult,
    Writes,
)


async def test_seqs_are_gap_free_under_concurrent_writers_and_rollbacks(
        open_store: Opener) -> None:
    a, b = await open_store(), await open_store()
    run = await a.create_run("p", {})
    other = await b.create_run("p", {})

    async def write(store: Blackboard, n: int) -> None:
        for i in range(n):
            await store.append_event(run.id, "x", {"i": i})
            await store.append_event(other.id, "y", {})
            with pytest.raises(UserError):  # rolled back: it takes its seq with it
                await store.append_event(run.id, "bad", {"v": object()})
            with pytest.raises(NotFoundError):
                await store.append_event("nope", "x", {})

    await asyncio.gather(*(write(s, 15) for s in (a, b, a, b)))
    for run_id, total in ((run.id, 61), (other.id, 61)):  # run.created + 4 x 15
        seqs = [e.seq for e in await a.events(run_id, limit=1000)]
        assert seqs == list(range(1, total + 1))
        assert (await b.get_run(run_id)).last_seq == total


async def test_events_read_from_a_cursor_in_pages(store: Blackboard) -> None:
    run = await store.create_run("p", {})
    for i in range(9):
        await store.append_event(run.id, "x", {"i": i})
    page = await store.events(run.id, starting_after=3, limit=4)
    assert [e.seq for e in page] == [4, 5, 6, 7]
    assert [e.data for e in page] == [{"i": 2}, {"i": 3}, {"i": 4}, {"i": 5}]
    assert await store.events(run.id, starting_after=10) == []


async def test_events_of_some_kinds_are_read_in_pages_with_their_seqs(
        store: Blackboard) -> None:
    run = await store.create_run("p", {})
    for i in range(7):
        await store.append_event(run.id, "keep" if i % 3 == 0 else "skip", {"i": i})
        if i == 5:
            await store.append_event(run.id, "also", {"i": i})
    first = await store.events(run.id, kinds=["keep", "also"], limit=2)
    rest = await store.events(run.id, kinds=["keep", "also"], starting_after=first[-1].seq)
    assert [(e.seq, e.kind) for e in first + rest] == [
        (2, "keep"), (5, "keep"), (8, "also"), (9, "keep")]  # seqs as written, gaps kept
    assert await store.events(run.id, kinds=[]) == []
    assert await store.events(run.id, kinds=["run.created"]) == (await store.events(run.id))[:1]
    with pytest.raises(NotFoundError):
        await store.events("nope", kinds=["keep"])


async def test_follow_sees_every_commit_of_any_handle_once_in_order(open_store: Opener) -> None:
    a, b = await open_store(), await open_store()
    run = await a.create_run("p", {})
    seen: list[Event] = []

    async def follow() -> None:
        async for event in a.follow(run.id, starting_after=0):
            seen.append(event)
            if event.seq == 41:
                return

    follower = asyncio.create_task(follow())
    for i in range(20):
        await a.append_event(run.id, "from-a", {"i": i})
        await b.append_event(run.id, "from-b", {"i": i})
    async with asyncio.timeout(30):
        await follower
    assert [e.seq for e in seen] == list(range(1, 42))
    assert sum(e.kind == "from-b" for e in seen) == 20


async def test_follow_ends_when_the_store_closes(open_store: Opener) -> None:
    store = await open_store()
    run = await store.create_run("p", {})

    seen: list[int] = []
    first = asyncio.Event()

    async def drain() -> list[int]:
        async for e in store.follow(run.id):
            seen.append(e.seq)
            first.set()
        return seen

    follower = asyncio.create_task(drain())
    async with asyncio.timeout(30):  # a loaded machine: wait for the read, not a fixed time
        await first.wait()
    await store.close()
    async with asyncio.timeout(10):
        assert await follower == [1]


async def test_payloads_over_the_limit_are_refused_with_nothing_written(
        open_store: Opener) -> None:
    store = await open_store(max_payload_bytes=1000)
    run = await store.create_run("p", {}, tasks=[NewTask("a", {})])
    task = await store.claim_task("w", run_id=run.id)
    assert task is not None
    lease = Lease("w", task.attempt)
    before = await store.events(run.id)
    big = "x" * 2000
    for write in (store.append_event(run.id, "x", {"big": big}),
                  store.post_note(run.id, "a", NewNote(big)),
                  store.post_plan(run.id, "a", {"big": big}),
                  store.add_tasks(run.id, [NewTask("b", big)]),
                  store.complete_step(StepResult(task.id, 0, 1, "model", "m", "d"), lease,
                                      agent_id=f"{run.id}/a",
                                      writes=Writes(messages=[Message("user", "small"),
                                                              Message("assistant", big)])),
                  store.complete_task(task.id, lease, {"big": big}, agent_id=f"{run.id}/a")):
        with pytest.raises(PayloadTooLargeError, match="1000 bytes"):
            await write
    assert await store.events(run.id) == before
    assert await store.get_messages(f"{run.id}/a") == []
    assert (await store.get_task(task.id)).status == "running"


async def test_a_step_its_writes_and_its_event_commit_together(store: Blackboard,
                                                               claimed: Claimed) -> None:
    run, task, lease = await claimed()
    agent = f"{run.id}/coder"
    await store.complete_step(StepResult(task.id, 0, 1, "tool", "t", "d", {"ok": 1}), lease,
                              agent_id=agent,
                              writes=Writes(messages=[Message("tool", "done")],
                                            notes=[NewNote("learned")],
                                            events=[("custom", {"k": 1})]))
    kinds = [e.kind for e in await store.events(run.id)]
    assert sorted(kinds[-3:]) == ["custom", "note.posted", "step.completed"]
    assert [n.body for n in await store.search_notes(run.id)] == ["learned"]
