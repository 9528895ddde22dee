"""A slow pipeline on a *priced* model name, for the money-cap crash test.

``orchestra run --pipeline tests.e2e.cost_pipeline:build --input '{"turns": N, "calls": F}'``.
The model is a test double named ``openai:gpt-4.1-mini``, so genai-prices prices its
calls; each reports usage the way OpenAI would (its prompt, the part of it cached after
the first call, its reply) and appends a line to ``calls`` (fsynced): what was issued.
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
    ModelSettings,
    NewTask,
    Pipeline,
    Role,
    ToolContext,
    reply,
    tool,
)
from orchestra.models.base import Usage
from orchestra.models.testing import tool_call
from orchestra.tokens import estimate_tokens

REF = "tests.e2e.cost_pipeline:build"
MODEL = "openai:gpt-4.1-mini"
PAD = "Background the model reads at every call. " * 120  # ~1300 tokens of prompt


class Total(BaseModel):
    total: int


class Counter(Role):
    """You call bump once per turn, then answer {"total": n}."""

    output = Total
    recall = False
    settings = ModelSettings(max_tokens=100)  # what the money cap's look-ahead prices

    @tool
    async def bump(self, ctx: ToolContext, n: int) -> int:
        """Count one."""
        return n


def build(run_input: Any) -> Pipeline:
    inp = run_input if isinstance(run_input, dict) else {}
    turns, calls = int(inp.get("turns", 6)), inp.get("calls")

    async def script(request: ModelRequest) -> ModelResponse:
        await asyncio.sleep(float(inp.get("delay", 0.15)))
        done = [json.loads(m.content) for m in request.messages if m.role == "tool"]
        if calls:
            with open(calls, "a") as f:
                f.write(f"{len(done)}\n")
                f.flush()
                os.fsync(f.fileno())
        out = (reply("", tool_call("bump", {"n": len(done) + 1}, id=f"b{len(done)}"))
               if len(done) < turns else reply(json.dumps({"total": sum(done)})))
        prompt = sum(estimate_tokens(m.content) for m in request.messages)
        cached = (prompt * 3 // 4) if done else 0  # the provider's cache holds the prefix
        usage = Usage(prompt, 30 + 10 * len(done), cached_input_tokens=cached)
        return ModelResponse(out.text, out.tool_calls, usage, out.finish_reason, MODEL)

    return Pipeline("costly", roles=[Counter()],
                    start=lambda i: [NewTask("counter", {"pad": PAD}, max_attempts=1)],
                    model=FunctionModel(script, name=MODEL), ref=REF)
