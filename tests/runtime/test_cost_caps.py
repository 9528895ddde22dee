"""Money in the runtime: calls priced when made and journaled, per-role cost caps that
pause before a call, pipeline price overrides, and replay that never re-prices."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel

from orchestra import (
    Coordinator,
    CoordinatorSettings,
    ModelResponse,
    ModelSettings,
    NewTask,
    Pipeline,
    Role,
    ScriptedModel,
    SQLiteBlackboard,
    ToolContext,
    tool,
    tool_call,
)
from orchestra.coordinator.usage_report import run_usage
from orchestra.models.base import ToolCall, Usage
from orchestra.models.prices import Price

MODEL = "openai:gpt-4.1-mini"
RATE = Price(2.0, 8.0, 0.5)  # USD per million: an override, so the sums are round


class Done(BaseModel):
    n: int


class Worker(Role[Done, Done]):
    """You bump twice, then answer."""

    settings = ModelSettings(max_tokens=100)
    recall = False

    @tool
    async def bump(self, ctx: ToolContext, n: int) -> int:
        """Count one."""
        return n


def answer(text: str = "", *calls: ToolCall, cached: int = 0) -> ModelResponse:
    return ModelResponse(text, calls, Usage(1000, 50, cached_input_tokens=cached),
                         "tool_calls" if calls else "stop")


def script() -> ScriptedModel:
    return ScriptedModel([answer("", tool_call("bump", {"n": 1}, id="a")),
                          answer("", tool_call("bump", {"n": 2}, id="b"), cached=800),
                          answer('{"n": 3}', cached=900)], name=MODEL)


def pipeline(role: Role) -> Pipeline:
    return Pipeline("money", roles=[role], start=lambda i: [NewTask(role.name, i)],
                    prices={MODEL: RATE})


# (1000 - cached) * 2 + cached * 0.5 + 50 * 8, per million
COSTS = [(1000 * 2 + 400) / 1e6, (200 * 2 + 800 * 0.5 + 400) / 1e6,
         (100 * 2 + 900 * 0.5 + 400) / 1e6]


async def test_pipeline_prices_win_and_every_call_is_journaled_with_its_cost(
        tmp_path: Path) -> None:
    store = await SQLiteBlackboard.open(tmp_path / "m.db")
    try:
        run = await Coordinator(store, pipeline(Worker()), models={"worker": script()}
                                ).run({"n": 0})
        usage = await run_usage(store, run.id)
        (task,) = await store.list_tasks(run.id)
        steps = [s for s in await store.get_steps(task.id, 0) if s.kind == "model"]
    finally:
        await store.close()
    assert run.status == "completed", run.error
    assert [s.cost for s in steps] == pytest.approx(COSTS, rel=1e-12)
    assert [s.output["cost"] for s in steps] == [s.cost for s in steps]
    assert run.cost == pytest.approx(sum(COSTS), rel=1e-12)
    assert usage.total.usage.cached_input_tokens == 1700 and usage.by_task[task.id].calls == 3


async def test_role_cost_cap_pauses_before_the_call_and_resumes_when_raised(
        tmp_path: Path) -> None:
    class Capped(Worker):
        """You bump twice, then answer."""

        name = "capped"
        # the first call fits; the second's look-ahead (its prompt and 100 tokens out at
        # these prices) would cross the cap
        max_cost_per_agent = COSTS[0] + 0.0005

    model = script()
    store = await SQLiteBlackboard.open(tmp_path / "m.db")
    try:
        coord = Coordinator(store, pipeline(Capped()), models={"capped": model},
                            settings=CoordinatorSettings(max_cost_per_run=1.0))
        run = await coord.run({"n": 0})
        assert run.status == "paused" and run.reason == "budget"
        assert "max_cost_per_agent" in (run.error or "") and "before the call" in run.error
        assert len(model.calls) == 1 and run.cost == pytest.approx(COSTS[0], rel=1e-12)
        Capped.max_cost_per_agent = 1.0  # raised in the code, as the error says
        run = await coord.resume(run.id)
    finally:
        await store.close()
    assert run.status == "completed", run.error
    model.assert_complete()  # the paid call was replayed, not made again
    assert run.cost == pytest.approx(sum(COSTS), rel=1e-12)
