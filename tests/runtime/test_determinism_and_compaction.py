"""Determinism errors on changed code, and summarize/recall over a long-lived agent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestra import (
    Coordinator,
    FunctionModel,
    KeepAll,
    ModelRequest,
    NewHandoff,
    NewTask,
    Pipeline,
    Role,
    SQLiteBlackboard,
    Summarize,
    Task,
    ToolContext,
    reply,
    tool,
    tool_call,
)
from orchestra.compaction import message_tokens
from orchestra.errors import DeterminismError
from orchestra.runtime.agent_state import AgentState
from orchestra.runtime.task_runner import TaskRunner
from orchestra.store import Lease, Writes


class Tooly(Role):
    """You use tools."""

    name = "tooly"

    @tool
    async def alpha(self, ctx: ToolContext) -> str:
        """A."""
        return "a"

    @tool
    async def beta(self, ctx: ToolContext) -> str:
        """B."""
        return "b"


async def test_replay_that_asks_for_another_step_fails_loudly(tmp_path: Path) -> None:
    store = await SQLiteBlackboard.open(tmp_path / "o.db")
    run = await store.create_run("p", "go", tasks=[NewTask("tooly", "go")])
    (task,) = await store.claim_tasks("w1", capacity={"tooly": 1}, limit=1)
    lease = Lease("w1", task.attempt)
    # first life: the model called alpha, then the process "died" before finishing
    journal_model = FunctionModel(lambda req: reply("", tool_call("alpha")))
    first = TaskRunner(store=store, role=Tooly(), model=journal_model,
                       agent=AgentState(f"{run.id}/tooly", "tooly", run.id), task=task,
                       lease=lease).run()
    with pytest.raises(Exception):  # noqa: B017 - stop it mid-way: the lease is taken away
        async def model_then_stop(req: ModelRequest) -> object:
            if any(m.role == "tool" for m in req.messages):
                await store.release_leases(run.id, owners=["w1"])
                raise RuntimeError("crash")
            return reply("", tool_call("alpha"))
        journal_model.fn = model_then_stop
        await first
    # second life: the code changed (the tool was renamed), so replay takes another path
    class Renamed(Role):
        """You use tools."""

        name = "tooly"

        @tool
        async def gamma(self, ctx: ToolContext) -> str:
            """G."""
            return "g"

    (again,) = await store.claim_tasks("w2", capacity={"tooly": 1}, limit=1)
    assert again.id == task.id and again.attempt == 2
    changed = FunctionModel(lambda req: reply("", tool_call("gamma")))
    with pytest.raises(DeterminismError) as info:
        await TaskRunner(store=store, role=Renamed(), model=changed,
                         agent=AgentState(f"{run.id}/tooly", "tooly", run.id), task=again,
                         lease=Lease("w2", again.attempt)).run()
    err = info.value
    assert err.task_id == task.id and err.step == 2
    assert "'tool:alpha'" in str(err) and "'model:model'" in str(err)
    assert changed.calls == []  # the recorded model step was replayed, not re-asked
    await store.close()


class Chatty(Role):
    """You talk."""

    name = "chatty"
    compaction = Summarize(threshold=1200, keep_tokens=500, summary_tokens=100)


class Hoarder(Chatty):
    """You talk."""

    name = "chatty"
    compaction = KeepAll()


def _loop_pipeline(role: Role, model: FunctionModel, turns: int) -> Pipeline:
    def again(out: str, task: Task, writes: Writes) -> None:
        n = task.input["turn"]
        if n < turns:
            writes.handoffs.append(NewHandoff("chatty", {"turn": n + 1}))

    return Pipeline("loop", roles=[role], start=lambda _: [NewTask("chatty", {"turn": 1})],
                    routes={"chatty": again}, model=model)


def _talker(sent: list[int]) -> FunctionModel:
    def fn(req: ModelRequest) -> object:
        sent.append(sum(message_tokens(m) for m in req.messages))
        if req.messages[0].content.startswith("You write faithful"):
            return "summary: " + "s" * 200
        turn = json.loads(req.messages[-1].content)["turn"]
        return f"turn {turn}: the secret word of this turn is w{turn}q " + "x" * 300
    return FunctionModel(fn)


async def test_summarize_keeps_every_call_under_budget_and_recall_finds_all(tmp_path: Path
                                                                           ) -> None:
    turns = 150
    sent: list[int] = []
    store = await SQLiteBlackboard.open(tmp_path / "o.db")
    run = await Coordinator(store, _loop_pipeline(Chatty(), _talker(sent), turns)).run({})
    assert run.status == "completed", run.error
    # every call stays under threshold plus one turn's worth (the verbatim tail)
    assert max(sent) <= 1200 + 200, max(sent)
    agent = f"{run.id}/chatty"
    compactions = await store.get_compactions(agent)
    assert compactions and all(c.first_seq == 1 for c in compactions)
    assert [c.last_seq for c in compactions] == sorted(c.last_seq for c in compactions)
    msgs = await store.get_messages(agent)
    assert len(msgs) == 2 * turns  # raw messages are all kept
    found = await store.search_messages(agent, "w3q")
    assert any("w3q" in m.content for m in found)  # recall reaches hidden history
    # keep-all grows without bound
    hoard: list[int] = []
    store2 = await SQLiteBlackboard.open(tmp_path / "k.db")
    await Coordinator(store2, _loop_pipeline(Hoarder(), _talker(hoard), turns)).run({})
    assert hoard[-1] > 10 * max(sent)
    await store.close()
    await store2.close()


class Wide(Chatty):
    """You talk."""

    name = "chatty"
    compaction = Summarize(threshold=2400, keep_tokens=400, summary_tokens=100)


async def test_a_fold_larger_than_the_window_is_summarized_a_part_at_a_time(
        tmp_path: Path) -> None:
    """A policy that folds more than the model's window holds (here 2,000 tokens of a
    1,000-token window) asks for its summary in parts, each request inside the window,
    each part a record the next one folds in; the run completes."""
    sizes: list[int] = []
    talker = _talker([])

    class Small(FunctionModel):
        context_tokens = 1000

    def fn(req: ModelRequest) -> object:
        if req.messages[0].content.startswith("You write faithful"):
            sizes.append(sum(message_tokens(m) for m in req.messages))
        return talker.fn(req)

    store = await SQLiteBlackboard.open(tmp_path / "o.db")
    run = await Coordinator(store, _loop_pipeline(Wide(), Small(fn), 40)).run({})
    assert run.status == "completed", run.error
    assert sizes and max(sizes) <= 1000 - 100, sizes
    parts = await store.get_compactions(f"{run.id}/chatty")
    lasts = [c.last_seq for c in parts]
    assert len(parts) == len(sizes) and lasts == sorted(set(lasts))  # each a step further
    assert all(c.first_seq == 1 for c in parts)  # each folds the one before it in
    await store.close()
