"""Every statement on aiosqlite is a hop to its thread and back: a step costs as many hops
as it runs statements. Counted call by call on the store's own connections (issue 25;
``tests/postgres/test_pg_round_trips.py`` is PostgreSQL's counterpart)."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from store_helpers import Statements, query, until

from benchmarks.sides.orchestra_side import FakeAdapter, pipeline
from benchmarks.workload import CALLS_PER_PIPELINE, FakeModel
from orchestra import Coordinator
from orchestra._errors import LeaseLostError, NotFoundError, UserError
from orchestra._types import Message
from orchestra.store import (
    ClaimSpec,
    Lease,
    NewHandoff,
    NewTask,
    SQLiteBlackboard,
    StepResult,
    Writes,
)


@pytest.fixture
def statements() -> Statements:
    return Statements()


@pytest.fixture
async def store(db_path: Path, statements: Statements) -> AsyncIterator[SQLiteBlackboard]:
    """The store, telling ``statements`` what its connections send (its ``trace``)."""
    async with await SQLiteBlackboard.open(db_path, trace=statements) as board:
        yield board


def _step(task_id: str, n: int) -> StepResult:
    return StepResult(task_id, 0, n, "model", "m", "d", {"text": "hi"}, tokens_in=3,
                      tokens_out=4)


async def test_a_task_end_is_one_statement_when_the_process_knows_its_task(
        store: SQLiteBlackboard, statements: Statements, db_path: Path) -> None:
    async with await SQLiteBlackboard.open(db_path) as maker:  # another process made the run
        run = await maker.create_run("p", {}, tasks=[NewTask("coder", {})])
    task = await store.claim_task("w", run_id=run.id)  # the store learns the task's run
    assert task is not None
    lease, agent = Lease("w", task.attempt), f"{run.id}/coder"
    spec = ClaimSpec("w", {"reviewer": 1}, limit=1, run_id=run.id)
    writes = Writes(messages=[Message("user", "do it"), Message("assistant", "done")],
                    handoffs=[NewHandoff("reviewer", {"v": 1}, note="look")])
    with statements.counting() as (sent, _):
        [nxt] = await store.complete_task(task.id, lease, {"ok": True}, agent_id=agent,
                                                    writes=writes, step=_step(task.id, 1),
                                                    claim=spec)
    # the agent's last seq was not known: read with the lease and the run's pending work in
    # ONE statement, then the record; a lone write, so no BEGIN/COMMIT (one statement each)
    assert [s.split(" ")[0] for s in sent] == ["SELECT", "INSERT"], sent
    # the reviewer's task came from the claim: its end (no messages) is the record alone
    with statements.counting() as (sent, _):
        await store.complete_task(
            nxt.id, Lease("w", nxt.attempt), {"ok": 2}, agent_id=f"{run.id}/reviewer",
            step=_step(nxt.id, 1), claim=ClaimSpec("w", {"coder": 1}, limit=1, run_id=run.id))
    assert [s.split(" ")[0] for s in sent] == ["INSERT"], sent
    # another process appends to the coder's history: what this one knows is stale
    other = await SQLiteBlackboard.open(db_path)
    try:
        await other.add_tasks(run.id, [NewTask("coder", {})])
        elsewhere = await other.claim_task("w2", run_id=run.id)
        assert elsewhere is not None
        await other.complete_step(_step(elsewhere.id, 1), Lease("w2", elsewhere.attempt),
                                  agent_id=agent, writes=Writes(messages=[Message("user", "x")]))
    finally:
        await other.close()
    await store.add_tasks(run.id, [NewTask("coder", {})])
    mine = await store.claim_task("w", run_id=run.id)
    assert mine is not None
    with statements.counting() as (sent, _):
        await store.complete_task(
            mine.id, Lease("w", mine.attempt), {"ok": 3}, agent_id=agent,
            writes=Writes(messages=[Message("assistant", "mine")]), step=_step(mine.id, 1),
            claim=ClaimSpec("w", {"coder": 1}, limit=1, run_id=run.id))
    # the record refused the stale seq whole; one read, and the record again
    assert [s.split(" ")[0] for s in sent] == ["INSERT", "SELECT", "INSERT"], sent
    assert [(m.seq, m.content) for m in await store.get_messages(agent)] == [
        (1, "do it"), (2, "done"), (3, "x"), (4, "mine")]
    events = await store.events(run.id)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    # fencing holds without the read: a lost lease is refused and writes nothing
    [last] = await store.add_tasks(run.id, [NewTask("coder", {})])
    claimed = await store.claim_task("w", run_id=run.id)
    assert claimed is not None and claimed.id == last.id
    with statements.counting() as (sent, _), pytest.raises(LeaseLostError, match="lease lost"):
        await store.complete_task(
            last.id, Lease("w", 99), {}, agent_id=f"{run.id}/coder", step=_step(last.id, 1),
            claim=ClaimSpec("w", {"coder": 1}, limit=1))
    assert [s.split(" ")[0] for s in sent] == ["INSERT", "SELECT"], sent
    assert len(await store.events(run.id)) == len(events) + 2  # the add and the claim only
    assert (await store.get_task(last.id)).status == "running"


async def test_a_run_is_created_and_moved_in_few_statements(
        store: SQLiteBlackboard, statements: Statements) -> None:
    with statements.counting() as (sent, _):
        run = await store.create_run("p", {"x": 1}, tasks=[NewTask("a", {}), NewTask("b", {})])
    # the run (a taken id inserts nothing), its tasks, its last seq, its events
    assert len(sent) == 2 + 5, sent
    assert run.last_seq == 3 and run == await store.get_run(run.id)
    with statements.counting() as (sent, reads):
        moved = await store.set_run_status(run.id, "running", only_from=("pending",))
    # the change, its event and its guard are one statement (schema v8); the run is read
    assert [s.split(" (")[0] for s in sent] == ["INSERT INTO run_status_changes"], sent
    assert len(reads) == 1
    assert moved == await store.get_run(run.id) and moved.last_seq == 4
    assert moved.status == "running"
    [event] = (await store.events(run.id))[-1:]
    assert (event.kind, event.seq, event.data) == (
        "run.running", 4, {"status": "running", "previous": "pending", "error": None})
    [(raw,)] = query(Path(store.path), "SELECT data FROM events WHERE run_id = ? AND seq = 4",
                     run.id)
    assert raw == '{"status":"running","previous":"pending","error":null}'  # as Python's
    # a change its guard refuses writes nothing, and says why (the general way)
    with pytest.raises(UserError, match="is running; this change needs it to be one of"):
        await store.set_run_status(run.id, "running", only_from=("pending",))
    with pytest.raises(NotFoundError):
        await store.set_run_status("nosuch", "running")
    assert (await store.get_run(run.id)).last_seq == 4
    # with an error text it is the general way (its row, the change with its seq, the event)
    with statements.counting() as (sent, _):
        failed = await store.set_run_status(run.id, "failed", error="boom")
    assert len(sent) == 2 + 3, sent
    assert failed.error == "boom" and failed.last_seq == 5
    with pytest.raises(UserError, match="already exists"):
        await store.create_run("p", {}, run_id=run.id)
    assert (await store.get_run(run.id)).input == {"x": 1}


async def test_a_batch_takes_no_savepoints_unless_a_write_fails(
        store: SQLiteBlackboard, statements: Statements) -> None:
    run = await store.create_run("p", {})
    with statements.counting() as (sent, _):
        await asyncio.gather(*(store.append_event(run.id, "ok", {"i": i}) for i in range(10)))
    assert not [s for s in sent if "SAVEPOINT" in s or "RELEASE" in s], sent
    # a write that fails after writing (its first task inserted, its second refused) rolls
    # back alone: the batch runs again, each write in a savepoint
    with statements.counting() as (sent, _):
        results = await asyncio.gather(
            store.append_event(run.id, "before", {}),
            store.add_tasks(run.id, [NewTask("a", {}), NewTask("", {})]),
            store.append_event(run.id, "after", {}), return_exceptions=True)
    assert isinstance(results[1], UserError)
    assert await store.list_tasks(run.id) == []
    kinds = [e.kind for e in await store.events(run.id)]
    assert kinds == ["run.created"] + ["ok"] * 10 + ["before", "after"]
    # one batch (gathered writes queue before the writer wakes): tried whole, rolled back,
    # then run again with a savepoint each, the failing one rolled back to its own
    assert [s for s in sent if s.split(" ")[0] in ("BEGIN", "ROLLBACK", "COMMIT")] == [
        "BEGIN IMMEDIATE", "ROLLBACK", "BEGIN IMMEDIATE", "ROLLBACK TO op", "COMMIT"], sent


async def test_s1_statements_per_step(store: SQLiteBlackboard, statements: Statements) -> None:
    """One pipeline after another: each task's end a lone write of one statement."""
    coord = Coordinator(store, pipeline(FakeAdapter(FakeModel(latency=0.0))))
    await coord.run({"i": -1})
    pipelines = 3
    with statements.counting() as (writes, reads):
        for i in range(pipelines):
            assert (await coord.run({"i": i})).status == "completed"
    steps = pipelines * CALLS_PER_PIPELINE
    # was 8.8 a step: BEGIN, the lease, the run's pending work, the agent's last message
    # seq, the record, COMMIT (and savepoints); now the record, and per run a few more
    # (its status changes are rows too, read back after; a claim finding nothing reads)
    assert len(writes) / steps < 2.2, writes
    assert (len(writes) + len(reads)) / steps < 2.5, reads


async def test_an_agent_seq_comes_from_a_run_made_here_or_from_a_whole_read(
        store: SQLiteBlackboard, statements: Statements, db_path: Path) -> None:
    """No read before a first append to an agent of a run this process made (it has no
    messages yet), nor after this process read the agent's history to its end; a wrong
    guess (another process appended first) is refused by the record and read again."""
    async def end(run_id: str, role: str, text: str) -> list[str]:
        task = await store.claim_task("w", run_id=run_id, roles=[role])
        assert task is not None
        with statements.counting() as (sent, _):
            await store.complete_task(
                task.id, Lease("w", task.attempt), {}, agent_id=f"{run_id}/{role}",
                writes=Writes(messages=[Message("assistant", text)]), step=_step(task.id, 1),
                claim=ClaimSpec("w", {"x": 1}, limit=1, run_id=run_id))
        return [s.split(" ")[0] for s in sent]

    mine = await store.create_run("p", {}, tasks=[NewTask("coder", {})])
    assert await end(mine.id, "coder", "first") == ["INSERT"]
    async with await SQLiteBlackboard.open(db_path) as other:
        theirs = await other.create_run("p", {}, tasks=[NewTask("coder", {})])
        await other.add_tasks(mine.id, [NewTask("b", {})])
        [t] = await other.claim_tasks("o", capacity={"b": 1}, limit=1, run_id=mine.id)
        await other.complete_step(_step(t.id, 1), Lease("o", t.attempt), agent_id=f"{mine.id}/b",
                                  writes=Writes(messages=[Message("user", "theirs")]))
    # a run made elsewhere: its agent's seq is read first
    assert await end(theirs.id, "coder", "x") == ["SELECT", "INSERT"]
    # read whole, the agent's seq is known: the record alone
    await store.add_tasks(theirs.id, [NewTask("b", {})])
    assert [m.seq for m in await store.get_messages(f"{theirs.id}/b")] == []
    assert await end(theirs.id, "b", "y") == ["INSERT"]
    # the guess was wrong (another process appended to the agent first): refused, read again
    await store.add_tasks(mine.id, [NewTask("b", {})])
    assert await end(mine.id, "b", "z") == ["INSERT", "SELECT", "INSERT"]
    assert [(m.seq, m.content) for m in await store.get_messages(f"{mine.id}/b")] == [
        (1, "theirs"), (2, "z")]


async def test_a_lone_record_waits_for_a_lock_held_elsewhere(
        store: SQLiteBlackboard, statements: Statements, db_path: Path) -> None:
    """Its statement finds the lock taken (the writer connection waits only 2 ms per try):
    it wrote nothing, and is tried again (the record alone, no transaction around it)
    until the lock frees."""
    run = await store.create_run("p", {}, tasks=[NewTask("coder", {})])
    task = await store.claim_task("w", run_id=run.id)
    assert task is not None
    other = sqlite3.connect(db_path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    with statements.counting() as (sent, _):
        try:
            write = asyncio.ensure_future(store.complete_task(
                task.id, Lease("w", task.attempt), {"ok": True}, agent_id=f"{run.id}/coder",
                step=_step(task.id, 1), claim=ClaimSpec("w", {"coder": 1}, limit=1)))
            # the record was sent, found the lock taken, and is being sent again
            await until(lambda: len(sent) >= 2, "the record's second try")
            assert not write.done()
        finally:
            other.execute("COMMIT")
            other.close()
        assert await asyncio.wait_for(write, 10.0) == []
    assert sent[0].startswith("INSERT INTO step_records") and len(sent) > 1, sent[:2]
    assert set(sent) == {sent[0]}, set(sent)
    assert (await store.get_task(task.id)).status == "completed"
    assert [e.kind for e in await store.events(run.id)][-2:] == ["step.completed",
                                                                 "task.completed"]


async def test_renewals_of_one_batch_are_one_statement(
        store: SQLiteBlackboard, statements: Statements) -> None:
    """Serving renewals queued together are one upsert; one of a run that does not exist
    fails alone, as it would by itself."""
    runs = [await store.create_run("p", {}) for _ in range(3)]
    with statements.counting() as (sent, _):
        done = await asyncio.gather(*(store.serve_run(r.id, "w", 30.0) for r in runs),
                                    store.serve_run("nosuch", "w", 30.0), return_exceptions=True)
    assert done[:3] == [None, None, None]
    assert isinstance(done[3], NotFoundError) and "nosuch" in str(done[3])
    assert sent[0].startswith("INSERT INTO run_servers") and sent[0].count("(?, ?, ?, ?)") == 4
    until = await store.served_until([r.id for r in runs])
    assert all(v is not None and v > time.time() + 20 for v in until.values())


async def test_a_claim_with_nothing_to_take_takes_no_write_lock(
        store: SQLiteBlackboard, statements: Statements) -> None:
    """A run-scoped claim that finds nothing is one read (a busy worker asks after every
    task, and most find nothing); with work to take, it claims as before, expired leases
    included."""
    run = await store.create_run("p", {}, tasks=[NewTask("coder", {})])
    with statements.counting() as (writes, reads):
        [task] = await store.claim_tasks("w", capacity={"coder": 2}, limit=2, run_id=run.id)
        assert await store.claim_tasks("w", capacity={"coder": 2}, limit=2, run_id=run.id) == []
    assert len(reads) == 2 and writes and writes[0].startswith("BEGIN")
    assert len([w for w in writes if w == "BEGIN IMMEDIATE"]) == 1  # the first claim only
    # its lease lapses (its worker died): the next claim takes it over
    await store.heartbeat(task.id, Lease("w", task.attempt), lease_seconds=0.0)
    await asyncio.sleep(0.01)  # the clock passes the lease's end (now): no event to wait on
    [taken] = await store.claim_tasks("w2", capacity={"coder": 1}, limit=1, run_id=run.id)
    assert taken.id == task.id and taken.attempt == task.attempt + 1
    with pytest.raises(UserError, match="owner"):  # bad input still gets the claim's error
        await store.claim_tasks("", capacity={"coder": 1}, limit=1, run_id=run.id)


async def test_a_stale_record_among_many_is_found_and_the_others_commit(
        store: SQLiteBlackboard, statements: Statements, db_path: Path) -> None:
    """Task ends queued together are one statement; one whose agent another process wrote
    to meanwhile is refused (its trigger undoes the whole statement), found by halves,
    read again and written at the right seqs; every other end is written once."""
    runs = [await store.create_run("p", {}, tasks=[NewTask("coder", {})]) for _ in range(6)]
    tasks = [await store.claim_task("w", run_id=r.id) for r in runs]
    async with await SQLiteBlackboard.open(db_path) as other:  # appends to run 3's coder
        await other.add_tasks(runs[3].id, [NewTask("x", {})])
        [t] = await other.claim_tasks("o", capacity={"x": 1}, limit=1, run_id=runs[3].id)
        await other.complete_step(_step(t.id, 1), Lease("o", t.attempt),
                                  agent_id=f"{runs[3].id}/coder",
                                  writes=Writes(messages=[Message("user", "theirs")]))
    with statements.counting() as (sent, _):
        await asyncio.gather(*(store.complete_task(
            t.id, Lease("w", t.attempt), {"i": i}, agent_id=f"{r.id}/coder",
            writes=Writes(messages=[Message("assistant", f"mine {i}")]), step=_step(t.id, 1),
            claim=ClaimSpec("w", {"coder": 1}, limit=1, run_id=r.id))
            for i, (r, t) in enumerate(zip(runs, tasks, strict=True)) if t is not None))
    records = [s for s in sent if s.startswith("INSERT INTO step_records")]
    # all six (refused); 0-2 (written); 3-5 (refused); 3 alone (refused); 4-5 (written);
    # then 3 the general way: its agent's seq read, and its record again
    assert [r.count("(?,") for r in records] == [6, 3, 3, 1, 2, 1], sent
    assert [s.split(" ")[0] for s in sent][-2:] == ["SELECT", "INSERT"]
    for i, r in enumerate(runs):
        got = [(m.seq, m.content) for m in await store.get_messages(f"{r.id}/coder")]
        assert got == ([(1, "theirs"), (2, "mine 3")] if i == 3 else [(1, f"mine {i}")])
        assert (await store.task_counts(r.id)) == (  # the other's task is still its own
            {"completed": 1, "running": 1} if i == 3 else {"completed": 1})
        events = await store.events(r.id)
        assert [e.seq for e in events] == list(range(1, len(events) + 1))
