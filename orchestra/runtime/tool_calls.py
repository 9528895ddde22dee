"""Executing the tool calls of one model turn: validate, approve, run, journal.

Every call, to a Python tool of the role or to a tool of another :class:`ToolSource` (an
MCP server's: ``runtime.mcp_tools``), takes one path: checked by its source, numbered in
call order, past the one :class:`ApprovalGate`, journaled through ``Journal.run`` and sent
inside one ``execute_tool`` span. A source says only which calls are its, whether one is
well formed, and how it is sent (:class:`StepPlan`).

Every problem a model can cause (unknown tool, arguments that are not JSON or
do not match the schema, a tool that raises or hangs, a denied approval) turns
into an error *result* the model sees on its next turn. Only store failures and
cancellation escape.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

import pydantic

from orchestra._errors import ModelRetry
from orchestra._types import Approval, Task
from orchestra.models.base import ToolCall
from orchestra.runtime import keys
from orchestra.runtime.journal import Journal, Outcome, SendRules
from orchestra.store.protocol import ApprovalRequests, BoardReads, Lease
from orchestra.tools import EntryHook, HandoffCheck, Tool, ToolContext, render_tool_result
from orchestra.tracing import step_failed, step_span

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


@dataclass(frozen=True, slots=True)
class Checked:
    """A call whose tool exists and whose arguments fit it; nothing has run yet."""

    call: ToolCall
    name: str
    """The tool as the model calls it: the step's name, and the approval's."""
    arguments: dict[str, Any]
    needs_approval: bool
    tool: Any
    """The source's own handle on the tool (a :class:`Tool`, an MCP tool)."""
    source: ToolSource | None = None
    """None: a Python tool of the role."""


@dataclass(frozen=True, slots=True)
class StepPlan:
    """How one checked call is sent, as its journaled step runs it."""

    send: Callable[[], Awaitable[Outcome]]
    wait_start: bool = True
    """Its ``started`` record is durable before it is sent."""
    rules: SendRules | None = None
    """What to do before each send, and with a send whose answer was lost."""


class ToolSource(Protocol):
    """Tools run elsewhere by rules of their own (MCP servers: ``runtime.mcp_tools``).
    Their calls are numbered, approved, journaled and traced with the others."""

    def owns(self, name: str) -> bool: ...
    def check(self, call: ToolCall) -> Checked | str: ...  # str: what the model must fix
    def plan(self, checked: Checked, n: int) -> StepPlan: ...


class ApprovalGate:
    """Where a tool step asks a person: each question is an approval of the task's retry,
    keyed by a step slot, found again on resume; the task waits while it is pending."""

    def __init__(self, store: ApprovalRequests, task: Task, lease: Lease) -> None:
        self.store, self.task, self.lease = store, task, lease

    async def decided(self, slot: int, tool: str, arguments: dict[str, Any], *,
                      call: str) -> Approval:
        """The decided approval of ``slot`` (asked for once); raises :class:`ApprovalWait`
        (for the model's call ``call``) while it is pending."""
        retry = self.task.retries
        approval = await self.store.find_approval(self.task.id, retry, slot)
        if approval is None:
            approval = await self.store.request_approval(
                self.task.id, self.lease, retry=retry, step=slot, tool=tool,
                arguments=arguments)
        if approval.status == "pending":
            raise ApprovalWait(approval.id, call)
        return approval

    async def denial(self, n: int, tool: str, arguments: dict[str, Any]) -> str | None:
        """Step ``n``'s call asked for before it is sent: None when approved; the denial,
        as the model reads it, when denied."""
        approval = await self.decided(n, tool, json.loads(json.dumps(arguments, default=str)),
                                      call=tool)
        if approval.status == "denied":
            return (f"A human denied this call to {tool!r}"
                    f"{' (' + approval.decided_by + ')' if approval.decided_by else ''}: "
                    f"{approval.reason or 'no reason given'}. Do not repeat it; adapt.")
        return None


def _validate(call: ToolCall, tools: dict[str, Tool],
              needs_approval: Callable[[Tool], bool]) -> Checked | str:
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
    return Checked(call, tool.name, {name: getattr(args, name) for name in
                                     type(args).model_fields}, needs_approval(tool), tool)


def _traced(name: str, n: int, send: Callable[[], Awaitable[Outcome]]
            ) -> Callable[[], Awaitable[Outcome]]:
    """``send`` inside the step's ``execute_tool`` span (an error result fails the span)."""
    async def traced() -> Outcome:
        with step_span("tool", name, **{"orchestra.step": n}) as span:
            outcome = await send()
            if span is not None and outcome.output.get("is_error"):
                step_failed(span, str(outcome.output.get("content", ""))[:200])
            return outcome
    return traced


class ToolRunner:
    """Runs one turn's tool calls concurrently, each as a journaled step."""

    def __init__(self, *, store: ApprovalRequests, board: BoardReads, task: Task, lease: Lease,
                 journal: Journal, agent_id: str, tools: dict[str, Tool],
                 default_timeout: float, needs_approval: Callable[[Tool], bool],
                 check_handoff: HandoffCheck | None = None,
                 source: ToolSource | None = None, on_entry: EntryHook | None = None,
                 patches: Callable[[str], bool] | None = None) -> None:
        self.store = store
        self.patches = patches  # the task's, journaled with its first model step
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
        self.gate = ApprovalGate(store, task, lease)

    async def run_all(self, calls: tuple[ToolCall, ...] | list[ToolCall]) -> list[ToolResult]:
        # step numbers are reserved in call order so replay finds the same numbers
        planned: list[tuple[ToolCall, Checked | str, int]] = []
        for call in calls:
            src = self.source if self.source is not None and self.source.owns(call.name) else None
            checked = src.check(call) if src is not None else _validate(
                call, self.tools, self.needs_approval)
            planned.append((call, checked, 0 if isinstance(checked, str) else
                            self.journal.reserve()))
        if len(planned) == 1:  # most turns make one call: no task to gather
            return [await self._one(*planned[0])]
        results = await asyncio.gather(*(self._one(c, chk, n) for c, chk, n in planned),
                                       return_exceptions=True)
        waits = [r for r in results if isinstance(r, ApprovalWait)]
        for r in results:
            if isinstance(r, BaseException) and not isinstance(r, ApprovalWait):
                raise r
        if waits:
            raise waits[0]
        return [r for r in results if isinstance(r, ToolResult)]

    async def _one(self, call: ToolCall, checked: Checked | str, n: int) -> ToolResult:
        """One call, whatever its source: approved, then journaled and sent in its span."""
        if isinstance(checked, str):
            return ToolResult(call, checked, True)
        if checked.needs_approval and not self.journal.is_recorded(n):
            denial = await self.gate.denial(n, checked.name, checked.arguments)
            if denial is not None:
                return ToolResult(call, denial, True)
        plan = (checked.source.plan(checked, n) if checked.source is not None else
                StepPlan(lambda: self._execute(checked.tool, checked.arguments, n)))
        output = await self.journal.run(n, "tool", checked.name, keys.digest(call.arguments),
                                        _traced(checked.name, n, plan.send),
                                        wait_start=plan.wait_start, rules=plan.rules)
        return ToolResult(call, str(output["content"]), bool(output["is_error"]))

    async def _execute(self, tool: Tool, args: dict[str, Any], n: int) -> Outcome:
        ctx = ToolContext(run_id=self.task.run_id, task_id=self.task.id,
                          agent_id=self.agent_id, role=self.task.role, step=n,
                          idempotency_key=keys.idempotency_key(self.task, n),
                          board=self.board, task_input=self.task.input,
                          check_handoff=self.check_handoff, on_entry=self.on_entry,
                          patches=self.patches)
        timeout = tool.timeout or self.default_timeout
        try:
            # not wait_for: on Python 3.11 a cancel landing as the tool returns was lost,
            # and the run went on after Ctrl-C
            async with asyncio.timeout(timeout):
                value = await tool.fn(ctx, **args)
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
