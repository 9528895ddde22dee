"""What a shared agent (``orchestra worker``: other processes write to its run too) reads
from the store when its tasks start: its new messages always, its token and cost totals
(a read of the run's whole journal) only when a per-agent cap needs them."""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from orchestra import (
    Coordinator,
    CoordinatorSettings,
    FunctionModel,
    ModelRequest,
    ModelResponse,
    NewHandoff,
    NewTask,
    Pipeline,
    Role,
    SQLiteBlackboard,
    Task,
)
from orchestra.models import Usage
from orchestra.store import Writes

SHARED = CoordinatorSettings(shared=True)


class Step(BaseModel):
    n: int


class Count(Role):
    """You answer {"n": n} for your task's n."""

    name = "counter"
    output = Step
    recall = False


class CappedCounter(Count):
    """You answer {"n": n} for your task's n (a token cap per agent)."""

    max_tokens_per_agent = 100


def _chain(role: Role, length: int, usage: Usage | None = None) -> Pipeline:
    """``length`` tasks of ``role`` one after another (each hands off to the next): one
    agent, several tasks, each starting after the last one's messages were committed."""

    def route(out: Step, task: Task, writes: Writes) -> None:
        if out.n + 1 < length:
            writes.handoffs.append(NewHandoff(role.name, f"n={out.n + 1}"))

    def answer(request: ModelRequest) -> ModelResponse:
        text = f'{{"n": {request.messages[-1].content.rsplit("=", 1)[-1]}}}'
        return ModelResponse(text=text, usage=usage or Usage())

    return Pipeline("chain", roles=[role], model=FunctionModel(answer, name="fake"),
                    start=lambda _: [NewTask(role.name, "n=0")],
                    routes={role.name: lambda out, task, writes: route(out, task, writes)})


def _count(store: SQLiteBlackboard, calls: Counter[str], *names: str) -> None:
    """Count ``store``'s calls of ``names`` (this instance only)."""
    for name in names:
        method: Callable[..., Awaitable[Any]] = getattr(store, name)

        async def counted(*args: Any, _m: Callable[..., Awaitable[Any]] = method,
                          _n: str = name, **kwargs: Any) -> Any:
            calls[_n] += 1
            return await _m(*args, **kwargs)

        setattr(store, name, counted)


async def test_a_shared_agent_without_caps_reads_only_its_new_messages(tmp_path: Path) -> None:
    async with await SQLiteBlackboard.open(tmp_path / "w.db") as store:
        pipe = _chain(Count(), 4)
        run = await Coordinator(store, pipe).start({})  # created by one process ...
        calls: Counter[str] = Counter()
        _count(store, calls, "agent_infos", "get_messages")
        # ... and served by another
        final = await Coordinator(store, pipe, settings=SHARED).drive(run.id)
        assert final.status == "completed", final.error
        assert calls["agent_infos"] == 0  # was one per agent per drive: the run's whole journal
        assert calls["get_messages"] == 4  # still one per task: others may have written
        history = await store.get_messages(f"{run.id}/counter")
    assert len(history) == 8  # each task's input and answer, once


async def test_a_shared_agent_with_a_cap_counts_what_it_spent_in_another_process(
        tmp_path: Path) -> None:
    """The totals a cap needs are still read: a worker resuming a capped agent pauses the
    run again when the agent's earlier tasks (run by another process) reached its cap."""
    async with await SQLiteBlackboard.open(tmp_path / "w.db") as store:
        pipe = _chain(CappedCounter(), 2, usage=Usage(60, 40))  # 100 tokens a call
        first = await Coordinator(store, pipe).run({})  # the first task reaches the cap
        assert (first.status, first.reason) == ("paused", "budget"), first.error
        calls: Counter[str] = Counter()
        _count(store, calls, "agent_infos")
        run = await Coordinator(store, pipe, settings=SHARED).resume(first.id)
    assert (run.status, run.reason) == ("paused", "budget"), run.error
    assert "used 100 tokens, its cap is 100" in (run.error or "")
    assert calls["agent_infos"] == 1
