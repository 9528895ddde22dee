"""A streaming model's answer on the run's event log: ``model.delta`` events, in the run's
one seq order, whose pieces add up to what the journal recorded; none for a model that
does not stream, none when a step replays, and usage counted from the journal alone."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from orchestra import (
    Coordinator,
    NewTask,
    Pipeline,
    Role,
    ScriptedModel,
    SQLiteBlackboard,
    ToolContext,
    reply,
    tool,
    tool_call,
)
from orchestra._types import DELTA_EVENT, Event, Step, Task
from orchestra.models import Chunks
from orchestra.runtime.deltas import STREAMED, DeltaPace, DeltaWriter, delta_writer
from orchestra.store import Blackboard

LONG = "The answer, written slowly: " + "la " * 120


class Answer(BaseModel):
    value: int


class Calc(Role):
    """You add numbers with the add tool, then answer {"value": n}."""

    output = Answer
    max_turns = 4

    @tool
    async def add(self, ctx: ToolContext, a: int, b: int) -> int:
        """Add two integers."""
        return a + b


def script() -> list[Any]:
    return [reply(LONG, tool_call("add", {"a": 2, "b": 3}, id="c1")),
            reply(json.dumps({"value": 5, "note": LONG}))]


async def run(store: Blackboard, model: ScriptedModel) -> str:
    pipeline = Pipeline("calc", roles=[Calc()], model=model,
                        start=lambda inp: [NewTask("calc", inp, max_attempts=1)])
    done = await Coordinator(store, pipeline).run("add 2 and 3")
    assert done.status == "completed", done.error
    return done.id


async def deltas_of(store: Blackboard, run_id: str) -> tuple[list[Event], list[Event]]:
    events = await store.events(run_id, limit=10_000)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    return events, [e for e in events if e.kind == DELTA_EVENT]


async def check_streamed_run(store: Blackboard) -> None:
    model = ScriptedModel(script(), stream=Chunks(size=7))
    run_id = await run(store, model)
    events, deltas = await deltas_of(store, run_id)
    (task,) = await store.list_tasks(run_id)
    steps = [s for s in await store.get_steps(task.id, 0) if s.kind == "model"]
    for step in steps:
        mine = [d.data for d in deltas if d.data["step"] == step.step]
        assert mine and mine[0].get("first") is True
        assert all(not d.get("first") for d in mine[1:])
        assert {(d["task"], d["role"], d["attempt"], d["retry"]) for d in mine} == {
            (task.id, "calc", 1, 0)}
        assert "".join(d.get("text", "") for d in mine) == step.output["text"]
        calls = "".join(c[2] for d in mine for c in d.get("calls", []))
        assert calls == "".join(c[2] for c in step.output["calls"] or [])
        # every piece of a step precedes the step's completion in the log
        done = next(e.seq for e in events if e.kind == "step.completed"
                    and e.data["step"] == step.step and e.data["task"] == task.id)
        assert max(d.seq for d in deltas if d.data["step"] == step.step) < done
    # batched: far fewer events than pieces (every 7 characters)
    assert len(deltas) < sum(len(s.output["text"]) for s in steps) / 7 / 4
    run_row = await store.get_run(run_id)
    assert run_row.tokens_in + run_row.tokens_out == sum(s.tokens_in + s.tokens_out
                                                         for s in steps)


async def test_a_streaming_model_writes_its_answer_as_deltas(tmp_path: Path) -> None:
    store = await SQLiteBlackboard.open(tmp_path / "o.db")
    try:
        await check_streamed_run(store)
    finally:
        await store.close()


async def test_a_model_that_does_not_stream_writes_no_delta(tmp_path: Path) -> None:
    store = await SQLiteBlackboard.open(tmp_path / "o.db")
    try:
        run_id = await run(store, ScriptedModel(script()))
        assert (await deltas_of(store, run_id))[1] == []
    finally:
        await store.close()


class SlowLog:
    """An event log whose appends take a while (a busy store)."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.in_flight = self.most = 0

    async def append_event(self, run_id: str, kind: str, data: Any) -> Event:
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        await asyncio.sleep(0.01)
        self.in_flight -= 1
        self.events.append(data)
        return Event(run_id, len(self.events), kind, data, 0.0)


async def test_the_writer_batches_in_order_one_append_at_a_time() -> None:
    log = SlowLog()
    writer = DeltaWriter(log, "r1", {"task": "t"}, DeltaPace(every=0.005, chars=50))
    text = [f"{i:03d} " for i in range(300)]
    for i, piece in enumerate(text):
        writer.text(piece)
        if i == 150:
            writer.retry()  # the adapter tries again: what came before stays its own try
        if i % 10 == 0:
            await asyncio.sleep(0)  # the model's stream yields now and then
    await writer.close()
    assert log.most == 1  # never two appends at once: the order is the text's
    first = [e for e in log.events if e.get("try", 1) == 1]
    second = [e for e in log.events if e.get("try") == 2]
    assert "".join(e["text"] for e in first) == "".join(text[:151])
    assert "".join(e["text"] for e in second) == "".join(text[151:])
    assert [e.get("first") for e in log.events].count(True) == 2
    assert first[0]["first"] and second[0]["first"]
    assert len(log.events) < 60  # 1,200 characters in batches, not 300 appends


@pytest.mark.parametrize(("attempt", "retries", "retry_attempt", "step", "in_flight", "reissue"), [
    (1, 0, 1, 1, False, False),  # the task's first claim
    (2, 0, 1, 1, False, True),  # its process died in the first call: claimed again
    (3, 0, 1, 1, False, True),  # ... twice
    (2, 1, 2, 1, False, False),  # a retry's own first claim starts anew
    (3, 1, 2, 1, False, True),  # a retry claimed again after its process died
    (6, 3, 4, 1, False, True),  # ... twice, on a later retry
    (3, 1, 2, 2, False, False),  # a later step never begun before
    (2, 1, 2, 2, True, True),  # a later step left in flight (its journal row says so)
])
async def test_a_call_made_again_after_its_process_died_says_reissue(
        attempt: int, retries: int, retry_attempt: int, step: int, in_flight: bool,
        reissue: bool) -> None:
    log = SlowLog()
    task = Task("t1", "r1", "coder", {}, "running", attempt=attempt, retries=retries,
                retry_attempt=retry_attempt)
    started = Step("t1", retries, step, "model", "m", "d", "started", None, None, 1)
    writer = delta_writer(log, task, "r1/coder", step, started if in_flight else None, STREAMED)
    writer.text("def f")
    writer.text("(x):")
    await writer.close()
    assert log.events[0]["first"] is True
    assert log.events[0].get("reissue", False) is reissue
    assert (log.events[0]["attempt"], log.events[0]["retry"]) == (attempt, retries)
    assert not any(e.get("reissue") for e in log.events[1:])
