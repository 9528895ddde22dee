"""A tiny pipeline for the server's tests: ``tests.server.svc_pipeline:build``.

One ``counter`` role calls ``bump`` ``turns`` times (each model call sleeps
``delay`` seconds), then, if the input says ``deploy``, calls ``deploy`` (a tool
that needs a human's approval), then answers. Every tool side effect appends a
line to the file the input names as ``effects``, so a test counts what really ran.
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

REF = "tests.server.svc_pipeline:build"


class Total(BaseModel):
    total: int
    deployed: bool = False


class Counter(Role):
    """You call bump once per turn, maybe deploy, then answer {"total": n}."""

    name = "counter"
    output = Total
    recall = False
    needs_approval = frozenset({"deploy"})

    def __init__(self, effects: str | None) -> None:
        self.effects = effects

    def _record(self, line: str) -> None:
        if self.effects:
            with open(self.effects, "a") as f:
                f.write(line + "\n")
                f.flush()
                os.fsync(f.fileno())

    @tool
    async def bump(self, ctx: ToolContext, n: int) -> int:
        """Record one bump (a side effect outside the store)."""
        self._record(f"bump {ctx.idempotency_key} {n}")
        return n

    @tool
    async def deploy(self, ctx: ToolContext, target: str) -> str:
        """Deploy (a human approves it first)."""
        self._record(f"deploy {ctx.idempotency_key} {target}")
        return f"deployed to {target}"


def build(run_input: Any) -> Pipeline:
    inp = run_input if isinstance(run_input, dict) else {}
    turns = int(inp.get("turns", 3))
    delay = float(inp.get("delay", 0.05))
    wants_deploy = bool(inp.get("deploy", False))

    async def script(request: ModelRequest) -> ModelResponse:
        await asyncio.sleep(delay)
        results = [m for m in request.messages if m.role == "tool"]
        bumps = [json.loads(m.content) for m in results if m.name == "bump"]
        deploys = [m for m in results if m.name == "deploy"]
        if len(bumps) < turns:
            return reply("", tool_call("bump", {"n": len(bumps) + 1}, id=f"b{len(bumps)}"))
        if wants_deploy and not deploys:
            return reply("", tool_call("deploy", {"target": "prod"}, id="d0"))
        deployed = bool(deploys) and deploys[0].content.startswith('"deployed')
        return reply(json.dumps({"total": sum(bumps), "deployed": deployed}))

    return Pipeline("svc", roles=[Counter(inp.get("effects"))],
                    start=lambda i: [NewTask("counter", i, max_attempts=1)],
                    model=FunctionModel(script, name="svc"), ref=REF)
