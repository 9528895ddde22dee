"""A small three-role pipeline for the board's tests: ``tests.board.board_pipeline:build``.

``planner`` posts a plan and hands the work to ``worker``; ``worker`` calls ``bump``
``turns`` times (each model call sleeps ``delay`` s; it sees only its last 12
messages), maybe ``deploy`` (a tool a human approves), with ``recall: true`` calls
``recall``, then reports (a note and a handoff to ``reviewer``) and answers with
what its ``deploy`` call returned, so a test can see what the model saw. Tool side
effects append to the ``effects`` file. With ``plan: false`` the run starts at the worker.
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
    SlidingWindow,
    ToolContext,
    reply,
    tool,
    tool_call,
)

REF = "tests.board.board_pipeline:build"


class Done(BaseModel):
    ok: bool = True
    total: int = 0
    deploy_result: str | None = None


def _record(path: str | None, line: str) -> None:
    if path:
        with open(path, "a") as f:
            f.write(line + "\n")


class Planner(Role):
    """[planner] You split the job into parts and hand them to the worker."""

    name = "planner"
    output = Done
    recall = False

    @tool
    async def plan(self, ctx: ToolContext, parts: list[str]) -> str:
        """Post the plan and hand the work over."""
        ctx.post_plan({"goal": "count to the target", "parts": parts})
        ctx.handoff("worker", {"parts": parts}, note="count, then report")
        return "planned"


class Worker(Role):
    """[worker] You bump once per turn, maybe deploy, then report."""

    name = "worker"
    output = Done
    max_turns = 2000
    compaction = SlidingWindow(last=12)
    needs_approval = frozenset({"deploy"})

    def __init__(self, effects: str | None) -> None:
        self.effects = effects

    @tool
    async def bump(self, ctx: ToolContext, n: int) -> int:
        """Count one."""
        _record(self.effects, f"bump {ctx.idempotency_key} {n}")
        return n

    @tool
    async def deploy(self, ctx: ToolContext, target: str, version: str) -> str:
        """Deploy (a human approves it first)."""
        _record(self.effects, f"deploy {ctx.idempotency_key} {target} {version}")
        return f"deployed {version} to {target}"

    @tool
    async def report(self, ctx: ToolContext, total: int) -> str:
        """Share the result and ask for a review."""
        ctx.post_note(f"counted to {total}", "result")
        ctx.handoff("reviewer", {"total": total}, note="please check the count")
        return "reported"


class Reviewer(Role):
    """[reviewer] You check the worker's count."""

    name = "reviewer"
    output = Done
    recall = False


def _tool_results(request: ModelRequest, name: str) -> list[str]:
    return [m.content for m in request.messages if m.role == "tool" and m.name == name]


def build(run_input: Any) -> Pipeline:
    inp = run_input if isinstance(run_input, dict) else {}
    turns = int(inp.get("turns", 3))
    delay = float(inp.get("delay", 0.0))
    wants_deploy = bool(inp.get("deploy", False))

    async def script(request: ModelRequest) -> ModelResponse:
        if delay:
            await asyncio.sleep(delay)
        system = request.messages[0].content
        if "[planner]" in system:
            if not _tool_results(request, "plan"):
                return reply("", tool_call("plan", {"parts": ["count", "deploy", "report"]},
                                           id="p0"))
            return reply(json.dumps({"ok": True}))
        if "[reviewer]" in system:
            return reply(json.dumps({"ok": True}))
        bumps = _tool_results(request, "bump")  # only the last few are in view
        done = int(bumps[-1]) if bumps else 0
        if _tool_results(request, "report"):
            deploys = _tool_results(request, "deploy")
            return reply(json.dumps({"total": turns,
                                     "deploy_result": deploys[-1] if deploys else None}))
        if done < turns and not _tool_results(request, "deploy"):
            return reply("", tool_call("bump", {"n": done + 1}, id=f"b{done}"))
        if inp.get("recall") and not _tool_results(request, "recall"):
            return reply("", tool_call("recall", {"query": "bump"}, id="rc0"))
        if wants_deploy and not _tool_results(request, "deploy"):
            return reply("", tool_call("deploy", {"target": "prod", "version": "1.4.2"},
                                       id="d0"))
        return reply("", tool_call("report", {"total": turns}, id="r0"))

    first = "planner" if inp.get("plan", True) else "worker"
    return Pipeline("board-demo", roles=[Planner(), Worker(inp.get("effects")), Reviewer()],
                    start=lambda i: [NewTask(first, i, max_attempts=1)],
                    model=FunctionModel(script, name="board-demo"), ref=REF)
