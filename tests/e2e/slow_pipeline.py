"""A small, deliberately slow pipeline for the CLI's interrupt and cancel tests.

``orchestra run --pipeline tests.e2e.slow_pipeline:build --input '{"turns": N}'``
(with the repository root on ``PYTHONPATH``). One ``counter`` role calls its
``bump`` tool ``turns`` times, then answers ``{"total": n}`` (``tasks`` such tasks at
once); every model call sleeps ``delay`` seconds, so a test has time to interrupt it between steps.

Every tool side effect appends a line to ``<effects>`` when the run input names
a file, and every model call one to ``<calls>`` (the tool results it saw), so a test
can count what really ran.
"""

from __future__ import annotations

import asyncio
import json
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
    ToolContext,
    reply,
    tool,
    tool_call,
)

REF = "tests.e2e.slow_pipeline:build"


class Total(BaseModel):
    total: int


class Counter(Role):
    """You call bump once per turn, then answer {"total": n}."""

    name = "counter"
    output = Total
    recall = False
    max_turns = 500  # `turns` may be large: a cancel test needs the run still going (~5 s)

    def __init__(self, effects: str | None) -> None:
        self.effects = effects

    @tool
    async def bump(self, ctx: ToolContext, n: int) -> int:
        """Record one bump (a side effect outside the store)."""
        if self.effects:
            with open(self.effects, "a") as f:
                f.write(f"{ctx.idempotency_key} {n}\n")
                f.flush()
                os.fsync(f.fileno())
        return n


def build(run_input: Any) -> Pipeline:
    inp = run_input if isinstance(run_input, dict) else {}
    turns = int(inp.get("turns", 4))
    delay = float(inp.get("delay", 0.3))
    calls = inp.get("calls")

    async def script(request: ModelRequest) -> ModelResponse:
        await asyncio.sleep(delay)
        done = [json.loads(m.content) for m in request.messages if m.role == "tool"]
        if calls:
            with open(calls, "a") as f:
                f.write(f"{len(done)}\n")
        if len(done) < turns:
            return reply("", tool_call("bump", {"n": len(done) + 1}, id=f"b{len(done)}"))
        return reply(json.dumps({"total": sum(done)}))

    return Pipeline("slow", roles=[Counter(inp.get("effects"))],
                    start=lambda i: [NewTask("counter", i, max_attempts=1,
                                             key=f"c{k}" if k else None)
                                     for k in range(int(inp.get("tasks", 1)))],
                    model=FunctionModel(script, name="slow"), ref=REF)
