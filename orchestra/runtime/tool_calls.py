"""Executing the tool calls of one model turn: validate, approve, run, journal.

Every problem a model can cause (unknown tool, arguments that are not JSON or
do not match the schema, a tool that raises or hangs, a denied approval) turns
into an error *result* the model sees on its next turn. Only store failures and
cancellation escape.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import pydantic

from orchestra._errors import ModelRetry
from orchestra._types import Task
from orchestra.models.base import ToolCall
from orchestra.runtime import keys
from orchestra.runtime.journal import Journal, Outcome
from orchestra.store.protocol import ApprovalRequests, BoardReads, Lease
from orchestra.tools import EntryHook, HandoffCheck, Tool, ToolContext, render_tool_result
from orchestra.tracing import step_span

MAX_TOOL_RESULT_CHARS = 64_000


class ApprovalWait(Exception):
    """A tool call is waiting for a human decision; the task parks until it is made."""

    def __init__(self, approval_id: str, tool: str) -> None:
        self.approval_id = approval_id
        self.tool = tool
        super().__init__(f"waiting for approval {approval_id} of tool {tool!r}")


@dataclass(frozen=True, slots=True)
class ToolResult:
    call: ToolCall
    content: str
    is_error: bool


class ToolSource(Protocol):
    """Tools run elsewhere by rules of their own (MCP servers: ``orchestra.mcp.calls``);
    their steps are numbered in call order with the others."""

    def owns(self, name: str) -> bool: ...
    def check(self, call: ToolCall) -> Any: ...  # what ``run`` takes, or the error (str)
    async def run(self, call: ToolCall, checked: Any, n: int) -> ToolResult: ...


def _validate(call: ToolCall, tools: dict[str, Tool]) -> tuple[Tool, dict[str, Any]] | str:
    tool = tools.get(call.name)
    if tool is None:
        return (f"Unknown tool {call.name!r}. Available tools: {sorted(tools)}. "
                "Call one of those, or reply without tool calls when you are done.")
    try:
        raw = json.loads(call.arguments or "{}")
    except json.JSONDecodeError as exc:
        return (f"The arguments of your {call.name!r} call are not valid JSON ({exc.msg}): "
                f"{call.arguments[:300]!r}. Send a JSON object.")
    if not isinstance(raw, dict):
        return f"The arguments of {call.name!r} must be a JSON object, got {raw!r:.200}."
    try:
        args = tool.args_model.model_validate(raw)
    except pydantic.ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
                             for e in exc.errors()[:10])
        return f"Invalid arguments for {call.name!r}: {problems}. Fix them and call again."
    return tool, {name: getattr(args, name) for name in type(args).model_fields}


class ToolRunner:
    """Runs one turn's tool calls concurrently, each as a journaled step."""

    def __init__(self, *, store: ApprovalRequests, board: BoardReads, task: Task, lease: Lease,
                 journal: Journal, agent_id: str, tools: dict[str, Tool],
                 default_timeout: float, needs_approval: Callable[[Tool], bool],
                 check_handoff: HandoffCheck | None = None,
                 source: ToolSource | None = None, on_entry: EntryHook | None = None) -> None:
        self.store = store
        self.board = board  # what a tool sees of the store: reads only
        self.check_handoff = check_handoff
        self.on_entry = on_entry
        self.task = task
        self.lease = lease
        self.journal = journal
        self.agent_id = agent_id
        self.tools = tools
        self.default_timeout = default_timeout
        self.needs_approval = needs_approval
        self.source = source

    async def run_all(self, calls: tuple[ToolCall, ...] | list[ToolCall]) -> list[ToolResult]:
        # step numbers are reserved in call order so replay finds the same numbers
        planned: list[tuple[ToolCall, Any, int]] = []
        for call in calls:
            src = self.source if self.source is not None and self.source.owns(call.name) else None
            checked = src.check(call) if src is not None else _validate(call, self.tools)
            planned.append((call, checked, 0 if isinstance(checked, str) else
                            self.journal.reserve()))
        results = await asyncio.gather(*(self._one(c, chk, n) for c, chk, n in planned),
                                       return_exceptions=True)
        waits = [r for r in results if isinstance(r, ApprovalWait)]
        for r in results:
            if isinstance(r, BaseException) and not isinstance(r, ApprovalWait):
                raise r
        if waits:
            raise waits[0]
        return [r for r in results if isinstance(r, ToolResult)]

    async def _one(self, call: ToolCall, checked: Any, n: int) -> ToolResult:
        if isinstance(checked, str):
            return ToolResult(call, checked, True)
        if self.source is not None and self.source.owns(call.name):
            return await self.source.run(call, checked, n)
        tool, args = checked
        digest = keys.digest(call.arguments)
        if self.journal.lookup(n, "tool", tool.name) is None and self.needs_approval(tool):
            denial = await self._approval(tool, args, n)
            if denial is not None:
                return ToolResult(call, denial, True)
        output = await self.journal.run(n, "tool", tool.name, digest,
                                        lambda: self._execute(tool, args, n))
        return ToolResult(call, str(output["content"]), bool(output["is_error"]))

    async def _approval(self, tool: Tool, args: dict[str, Any], n: int) -> str | None:
        """None when approved; the denial text when denied; raises while pending."""
        retry = self.task.retries
        approval = await self.store.find_approval(self.task.id, retry, n)
        if approval is None or approval.status == "pending":
            if approval is None:
                approval = await self.store.request_approval(
                    self.task.id, self.lease, retry=retry, step=n, tool=tool.name,
                    arguments=json.loads(json.dumps(args, default=str)))
            raise ApprovalWait(approval.id, tool.name)
        if approval.status == "denied":
            return (f"A human denied this call to {tool.name!r}"
                    f"{' (' + approval.decided_by + ')' if approval.decided_by else ''}: "
                    f"{approval.reason or 'no reason given'}. Do not repeat it; adapt.")
        return None

    async def _execute(self, tool: Tool, args: dict[str, Any], n: int) -> Outcome:
        ctx = ToolContext(run_id=self.task.run_id, task_id=self.task.id,
                          agent_id=self.agent_id, role=self.task.role, step=n,
                          idempotency_key=keys.idempotency_key(self.task, n),
                          board=self.board, task_input=self.task.input,
                          check_handoff=self.check_handoff, on_entry=self.on_entry)
        timeout = tool.timeout or self.default_timeout
        try:
            with step_span("tool", tool.name, **{"orchestra.step": n}):
                value = await asyncio.wait_for(tool.fn(ctx, **args), timeout)
        except ModelRetry as exc:
            return Outcome({"content": str(exc), "is_error": True})
        except TimeoutError:
            return Outcome({"content": f"Tool {tool.name!r} timed out after {timeout:g} s. "
                            "Try smaller input, or a different approach.", "is_error": True})
        except Exception as exc:  # the model sees the failure and can adapt
            return Outcome({"content": f"Tool {tool.name!r} raised {type(exc).__name__}: "
                            f"{str(exc)[:2000]}", "is_error": True})
        content = render_tool_result(value)
        if len(content) > MAX_TOOL_RESULT_CHARS:
            content = (content[:MAX_TOOL_RESULT_CHARS]
                       + f"\n[... {len(content) - MAX_TOOL_RESULT_CHARS} characters cut]")
        return Outcome({"content": content, "is_error": False}, writes=ctx.writes or None)
