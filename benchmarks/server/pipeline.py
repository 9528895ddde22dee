"""The run ``python -m benchmarks.server`` streams: ``benchmarks.server.pipeline:build``.

One ``ticker`` calls ``tick`` ``turns`` times (each model call sleeps ``delay``
seconds: a steady stream of events), then answers; with ``park`` it first waits
on a human approval (an idle run for the memory measure).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from pydantic import BaseModel

from orchestra import (
    FunctionModel,
    ModelRequest,
    ModelResponse,
    NewTask,
    Pipeline,
    Role,
    ToolContext,
    reply,
    tool,
    tool_call,
)


class Done(BaseModel):
    ticks: int


class Ticker(Role):
    """You call tick once per turn, then answer {"ticks": n}."""

    name = "ticker"
    output = Done
    recall = False
    max_turns = 100_000
    needs_approval = frozenset({"park"})

    @tool
    async def tick(self, ctx: ToolContext, n: int) -> int:
        """One tick."""
        return n

    @tool
    async def park(self, ctx: ToolContext) -> str:
        """Wait for a human (never approved in the benchmark)."""
        return "unparked"


def build(run_input: Any) -> Pipeline:
    inp = run_input if isinstance(run_input, dict) else {}
    turns, delay, park = int(inp.get("turns", 10)), float(inp.get("delay", 0.02)), \
        bool(inp.get("park", False))

    async def script(request: ModelRequest) -> ModelResponse:
        await asyncio.sleep(delay)
        done = [m for m in request.messages if m.role == "tool"]
        if park and not done:
            return reply("", tool_call("park", {}, id="p"))
        ticks = [m for m in done if m.name == "tick"]
        if len(ticks) < turns:
            return reply("", tool_call("tick", {"n": len(ticks) + 1}, id=f"t{len(ticks)}"))
        return reply(json.dumps({"ticks": len(ticks)}))

    return Pipeline("ticker", roles=[Ticker()], start=lambda i: [NewTask("ticker", i)],
                    model=FunctionModel(script, name="ticker"),
                    ref="benchmarks.server.pipeline:build")
