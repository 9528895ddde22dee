"""A step on PostgreSQL is one round trip: counted statement by statement on a real
server (asyncpg's query logger on the store's one pooled connection)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import asyncpg
import pytest

from benchmarks.postgres.round_trips import Statements, per_step
from orchestra._errors import LeaseLostError, NotFoundError, StoreError, UserError
from orchestra._types import Message
from orchestra.store import (
    ClaimSpec,
    Lease,
    NewHandoff,
    NewTask,
    StepResult,
    Writes,
)
from orchestra.store.postgres import PostgresBlackboard


@pytest.fixture
def statements() -> Statements:
    return Statements()


@pytest.fixture
async def store(dsn: str, statements: Statements) -> AsyncIterator[PostgresBlackboard]:
    handle = await PostgresBlackboard.open(dsn, pool_size=1, trace=statements)
    yield handle
    await handle.close()


def _step(task_id: str, n: int) -> StepResult:
    return StepResult(task_id, 0, n, "model", "m", "d", {"text": "hi"}, tokens_in=3,
                      tokens_out=4)


async def _cycle(store: PostgresBlackboard, statements: Statements
                 ) -> tuple[str, str, list[str]]:
    """A task's life on a new run: a tool step started and completed, then its last model
    step with messages and a handoff, handing in and claiming the handoff's task. Returns
    the run, the task and the statements sent for the three step writes."""
    run = await store.create_run("p", {}, tasks=[_new("coder")])
    task = await store.claim_task("w", run_id=run.id)
    assert task is not None
    lease, agent = Lease("w", task.attempt), f"{run.id}/coder"
    writes = Writes(messages=[Message("user", "do it"), Message("assistant", "done")],
                    handoffs=[NewHandoff("reviewer", {"v": 1}, note="look")])
    spec = ClaimSpec("w", {"reviewer": 1}, limit=1, run_id=run.id)
    async with statements.counting() as sent:
        await store.start_step(task.id, 0, 2, "tool", "t", "d", lease)
        await store.complete_step(_step(task.id, 2), lease, agent_id=agent,
                                  writes=Writes(messages=[Message("user", "x")]))
        nxt = await store.complete_task(task.id, lease, {"ok": True},
                                                  agent_id=agent, claim=spec, writes=writes,
                                                  step=_step(task.id, 3))
    assert [t.role for t in nxt] == ["reviewer"]
    return run.id, task.id, sent


async def test_each_step_write_is_one_statement(store: PostgresBlackboard,
                                                statements: Statements) -> None:
    await _cycle(store, statements)  # first use: asyncpg prepares each statement (its types)
    run_id, task_id, sent = await _cycle(store, statements)
    assert len(sent) == 3, sent
    # what the one statements wrote is what the general path writes
    events = await store.events(run_id)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))  # gap-free
    assert [e.kind for e in events][-6:] == ["step.started", "step.completed", "handoff.posted",
                                             "step.completed", "task.completed", "task.claimed"]
    messages = await store.get_messages(f"{run_id}/coder")
    assert [m.content for m in messages] == ["x", "do it", "done"]
    assert (await store.get_run(run_id)).tokens_in == 6
    done = await store.get_task(task_id)
    assert done.status == "completed" and done.result == {"ok": True}


async def test_one_statement_keeps_fencing_and_the_journal(store: PostgresBlackboard) -> None:
    run = await store.create_run("p", {}, tasks=[_new("coder")])
    claimed = await store.claim_task("w", run_id=run.id)
    assert claimed is not None
    lease, agent = Lease("w", claimed.attempt), f"{run.id}/coder"
    with pytest.raises(LeaseLostError, match="lease lost"):
        await store.complete_step(_step(claimed.id, 1), Lease("w", 99), agent_id=agent)
    await store.complete_step(_step(claimed.id, 1), lease, agent_id=agent)
    with pytest.raises(StoreError, match="already completed"):
        await store.complete_step(_step(claimed.id, 1), lease, agent_id=agent)


async def test_a_run_status_change_is_one_statement(store: PostgresBlackboard,
                                                    statements: Statements, dsn: str) -> None:
    """Any status but ``cancelled`` (which cancels the run's tasks too) is one call of
    ``orchestra_set_run_status``: the general path's checks, row and event."""
    run = await store.create_run("p", {})
    await store.set_run_status(run.id, "running")  # first use: asyncpg prepares it
    async with statements.counting() as sent:
        moved = await store.set_run_status(run.id, "failed", error="boom",
                                           only_from=("running",))
    assert len(sent) == 1, sent
    assert (moved.status, moved.error, moved.last_seq) == ("failed", "boom", 3)
    conn = await asyncpg.connect(dsn)  # the event's bytes, as the general path's
    try:
        data = await conn.fetchval("SELECT data FROM events WHERE run_id = $1 AND seq = 3",
                                   run.id)
    finally:
        await conn.close()
    assert data == '{"status":"failed","previous":"running","error":"boom"}'
    with pytest.raises(UserError, match=r"is failed; this change needs it to be one of "
                                        r"\['running'\]"):
        await store.set_run_status(run.id, "completed", only_from=("running",))
    with pytest.raises(NotFoundError, match="does not exist"):
        await store.set_run_status("nope", "completed")
    assert (await store.get_run(run.id)).last_seq == 3  # a refused change wrote nothing


async def test_a_run_is_created_in_one_statement(store: PostgresBlackboard,
                                                 statements: Statements) -> None:
    """A run with tasks without keys is one call of ``orchestra_create_run``: the run,
    its tasks in order and their events, seqs from 1; a task with a key (looked up
    first) takes the general path; a taken id is refused either way."""
    await store.create_run("p", {})  # first use: asyncpg prepares it
    async with statements.counting() as sent:
        run = await store.create_run("p", {"x": 1}, run_id="r1", settings={"s": 1},
                                     tasks=[_new("a"), NewTask("b", {"n": 2}, max_attempts=2)])
    assert len(sent) == 1, sent
    assert (run.id, run.status, run.input, run.last_seq) == ("r1", "pending", {"x": 1}, 3)
    tasks = await store.list_tasks("r1")
    assert [(t.role, t.input, t.max_attempts, t.cause, t.status) for t in tasks] == [
        ("a", {"n": 1}, _new("a").max_attempts, "run", "pending"),
        ("b", {"n": 2}, 2, "run", "pending")]
    events = await store.events("r1")
    assert [(e.seq, e.kind, e.data) for e in events] == [
        (1, "run.created", {"pipeline": "p", "settings": {"s": 1}}),
        (2, "task.created", {"task": tasks[0].id, "role": "a", "cause": "run"}),
        (3, "task.created", {"task": tasks[1].id, "role": "b", "cause": "run"})]
    for keyed in (False, True):
        with pytest.raises(UserError, match="'r1' already exists"):
            await store.create_run("p", {}, run_id="r1",
                                   tasks=[NewTask("a", {}, key="k" if keyed else None)])
    async with statements.counting() as sent:
        await store.create_run("p", {}, run_id="r2", tasks=[NewTask("a", {}, key="k")])
    assert len(sent) > 1 and [t.key for t in await store.list_tasks("r2")] == ["k"]


async def test_s1_round_trips_per_step(dsn: str) -> None:
    counts = await per_step(dsn, 1)
    assert counts["writes_per_step"] < 1.5  # 17 steps, plus the run's own transactions



def _new(role: str) -> NewTask:
    return NewTask(role, {"n": 1})
