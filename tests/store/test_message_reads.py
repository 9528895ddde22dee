"""Agents' new messages asked for together are read in one statement (one hop to
aiosqlite's thread), and each caller gets what its own read would have returned."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from store_helpers import Statements

from orchestra._types import Message
from orchestra.store import Lease, NewTask, SQLiteBlackboard, StepResult, Writes


@pytest.fixture
def statements() -> Statements:
    return Statements()


@pytest.fixture
async def store(db_path: Path, statements: Statements) -> AsyncIterator[SQLiteBlackboard]:
    """The store, telling ``statements`` what its connections send (its ``trace``)."""
    async with await SQLiteBlackboard.open(db_path, trace=statements) as board:
        yield board


async def _histories(store: SQLiteBlackboard) -> dict[str, list[tuple[int, str]]]:
    """Three agents of one run with 1, 2 and 3 messages."""
    run = await store.create_run("p", {}, tasks=[NewTask(r, {}) for r in ("a", "b", "c")])
    want = {}
    for n, role in enumerate(("a", "b", "c"), start=1):
        task = await store.claim_task("w", run_id=run.id, roles=[role])
        assert task is not None
        agent = f"{run.id}/{role}"
        texts = [f"{role}{i}" for i in range(n)]
        await store.complete_step(
            StepResult(task.id, 0, 1, "model", "m", "d", {}), Lease("w", task.attempt),
            agent_id=agent, writes=Writes(messages=[Message("user", t) for t in texts]))
        want[agent] = [(i + 1, t) for i, t in enumerate(texts)]
    return want


async def test_reads_asked_together_are_one_statement(store: SQLiteBlackboard,
                                                      statements: Statements) -> None:
    want = await _histories(store)
    agents = list(want)
    with statements.counting() as (_, reads):
        asks = [(a, after) for a in agents for after in (0, 1)] + [(agents[0], 0), ("nobody", 0)]
        got = await asyncio.gather(*(store.get_messages(a, after_seq=s) for a, s in asks))
    assert len(reads) == 1, reads
    for (agent, after), messages in zip(asks, got, strict=True):
        assert [(m.seq, m.content) for m in messages] == [
            (seq, text) for seq, text in want.get(agent, []) if seq > after]
        assert all(m.agent_id == agent for m in messages)
    # alone, a read is the plain statement; with a limit, too
    with statements.counting() as (_, reads):
        assert [m.seq for m in await store.get_messages(agents[2], after_seq=1)] == [2, 3]
        assert [m.seq for m in await store.get_messages(agents[2], limit=1)] == [1]
    assert len(reads) == 2 and "json_each" not in reads[0]


async def test_a_cancelled_reader_leaves_the_read_to_the_others(
        store: SQLiteBlackboard) -> None:
    want = await _histories(store)
    agent = list(want)[1]
    first = asyncio.ensure_future(store.get_messages(agent))
    second = asyncio.ensure_future(store.get_messages(agent))
    await asyncio.sleep(0)
    first.cancel()
    assert [m.content for m in await second] == ["b0", "b1"]
    with pytest.raises(asyncio.CancelledError):
        await first
    assert [m.content for m in await store.get_messages(agent)] == ["b0", "b1"]
