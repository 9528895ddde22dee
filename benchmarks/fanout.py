"""A cheap fan-out pipeline for worker benchmarks (S5, takeover) and multi-worker tests.

``orchestra worker`` loads it by reference (``benchmarks.fanout:build``, repository
root on ``PYTHONPATH``). A run of ``{"tasks": N}`` creates N ``unit`` tasks at once;
each calls its model (a test double, answering at once), the ``effect`` tool once,
then the model again for its answer: three journaled steps per task.

``effects`` (a path) makes every tool execution append its idempotency key to that
file (``O_APPEND``: a line survives a kill -9 of the writer once written), so a test
counts what really ran; ``tool_sleep`` makes the tool take that long (seconds), and
``model_latency`` each model call (seconds: S5's latency-bound mode, 25 ms a call, has
each task wait 50 ms on its model).
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from pydantic import BaseModel

from orchestra import (
    FunctionModel,
    ModelRequest,
    ModelResponse,
    NewTask,
    Pipeline,
    Role,
    SlidingWindow,
    ToolContext,
    reply,
    tool,
    tool_call,
)

REF = "benchmarks.fanout:build"


class Done(BaseModel):
    n: int


class Unit(Role):
    """You call effect once with your task's n, then answer {"n": n}."""

    name = "unit"
    output = Done
    recall = False
    concurrency = 8
    compaction = SlidingWindow(last=6)

    def __init__(self, effects: str | None, tool_sleep: float) -> None:
        self.effects = effects
        self.tool_sleep = tool_sleep

    @tool
    async def effect(self, ctx: ToolContext, n: int) -> int:
        """Do the task's one side effect."""
        if self.tool_sleep:
            await asyncio.sleep(self.tool_sleep)
        if self.effects:
            fd = os.open(self.effects, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, f"{ctx.idempotency_key}\n".encode())
            finally:
                os.close(fd)
        return n


def _script(request: ModelRequest) -> ModelResponse:
    last = request.messages[-1]
    if last.role == "tool":
        return reply(f'{{"n": {last.content}}}')
    n = int(last.content.rsplit("=", 1)[-1]) if "=" in last.content else 0
    return reply("", tool_call("effect", {"n": n}, id="e"))


def _model(latency: float) -> FunctionModel:
    """The scripted model, answering at once or after ``latency`` seconds."""
    if latency <= 0:
        return FunctionModel(_script, name="fanout")

    async def slow(request: ModelRequest) -> ModelResponse:
        await asyncio.sleep(latency)
        return _script(request)

    return FunctionModel(slow, name="fanout")


def build(run_input: Any) -> Pipeline:
    inp = run_input if isinstance(run_input, dict) else {}
    count = int(inp.get("tasks", 10))
    role = Unit(inp.get("effects"), float(inp.get("tool_sleep", 0)))
    model = _model(float(inp.get("model_latency", 0)))
    return Pipeline("fanout", roles=[role], model=model,
                    start=lambda i: [NewTask("unit", f"n={k}", max_attempts=2)
                                     for k in range(count)], ref=REF)
