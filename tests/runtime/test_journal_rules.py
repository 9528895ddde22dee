"""A step that acts outside the process by rules of its own (an MCP call, issue 47) goes
through the journal's one entry point: its rules decide before each send, a decided
outcome is recorded unsent, a lost answer is decided again, and a failure leaves the
step in flight instead of recording it failed (it may have acted)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from orchestra import NewTask, SQLiteBlackboard
from orchestra.runtime.journal import Journal, LostAnswer, Outcome
from orchestra.store import Lease


class Rules:
    """Records what it was asked; sends unless told to answer for the step."""

    def __init__(self, answer: Outcome | None = None) -> None:
        self.asked: list[tuple[int, str | None]] = []
        self.answer = answer

    async def before_send(self, sent: int, lost: str | None) -> Outcome | None:
        self.asked.append((sent, lost))
        return self.answer


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLiteBlackboard]:
    store = await SQLiteBlackboard.open(tmp_path / "o.db")
    yield store
    await store.close()


async def _journal(store: SQLiteBlackboard) -> Journal:
    """The run's task claimed by worker ``w``, with its journal as recorded so far."""
    claimed = await store.claim_task("w", run_id=(await store.list_runs())[0].id)
    assert claimed is not None
    lease = Lease("w", claimed.attempt)
    steps = await store.get_steps(claimed.id, claimed.retries)
    return Journal(store, claimed, lease, "agent", steps)


async def _started(store: SQLiteBlackboard) -> Journal:
    await store.create_run("rules", None, tasks=[NewTask("worker", None)])
    return await _journal(store)


async def test_a_lost_answer_is_decided_again_then_sent(store: SQLiteBlackboard) -> None:
    journal, rules, sends = await _started(store), Rules(), []

    async def send() -> Outcome:
        sends.append(len(sends))
        if len(sends) == 1:
            raise LostAnswer("its server ending during the call")
        return Outcome({"content": "done", "is_error": False})

    output = await journal.run(1, "tool", "append", "d", send, rules=rules)
    assert output == {"content": "done", "is_error": False}
    assert rules.asked == [(0, None), (1, "its server ending during the call")]
    (step,) = await store.get_steps(journal.task.id, 0)
    assert (step.status, step.attempts, journal.executed) == ("completed", 2, 2)


async def test_an_outcome_decided_before_sending_is_recorded_unsent(
        store: SQLiteBlackboard) -> None:
    journal = await _started(store)
    refused = Outcome({"content": "not sent", "is_error": True})

    async def send() -> Outcome:
        raise AssertionError("sent")

    assert await journal.run(1, "tool", "append", "d", send, rules=Rules(refused)) == \
        refused.output
    (step,) = await store.get_steps(journal.task.id, 0)
    assert (step.status, step.output, journal.executed) == ("completed", refused.output, 0)


async def test_a_failure_leaves_the_step_in_flight_for_its_rules(
        store: SQLiteBlackboard) -> None:
    journal = await _started(store)

    async def broken() -> Outcome:
        raise RuntimeError("the connection dropped")

    with pytest.raises(RuntimeError):
        await journal.run(1, "tool", "append", "d", broken, rules=Rules())
    (step,) = await store.get_steps(journal.task.id, 0)
    assert step.status == "started"  # without rules it would be recorded failed
    await store.release_leases(journal.task.run_id, owners=["w"])  # its process died
    resumed = await _journal(store)
    rules = Rules(Outcome({"content": "a person said no", "is_error": True}))
    assert await resumed.run(1, "tool", "append", "d", broken, rules=rules) == {
        "content": "a person said no", "is_error": True}
    assert rules.asked == [(1, "a crash")]  # found in flight: decided, not sent again
