"""A task's MCP tools: the journaled tool list, and every call a journaled tool step.

The rules (issue 39): the list the model is offered is a step, replayed on resume; each
``tools/call`` is checked against the server's input schema, carries the step's
idempotency key in ``_meta``, and is journaled ``started`` (durably) before it is sent.
A step found ``started`` on resume was in flight at a crash: it is sent again only when
:func:`orchestra.mcp.rules.in_doubt` says so; otherwise the task waits for a person.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from orchestra._errors import UserError
from orchestra._log import get_logger
from orchestra._types import JSON, Event, Task
from orchestra.mcp import rules
from orchestra.mcp.declare import InDoubt, MCPServer
from orchestra.mcp.hub import MCPHub
from orchestra.mcp.listing import (
    LIST_STEP,
    MCPTool,
    build_tools,
    changes,
    import_jsonschema,
    offered,
)
from orchestra.mcp.results import record_result
from orchestra.models.base import ToolCall, ToolSchema
from orchestra.models.tape import ToolTape
from orchestra.runtime import keys
from orchestra.runtime.journal import Journal, Outcome
from orchestra.runtime.tool_calls import ApprovalWait, ToolResult
from orchestra.store.protocol import ApprovalRequests, Lease, StepRecorder, StepResult

log = get_logger("orchestra.mcp")


class MCPStore(StepRecorder, ApprovalRequests, Protocol):
    """What MCP calls write: their steps, in-doubt approvals, and a changed-tools event."""

    async def append_event(self, run_id: str, kind: str, data: JSON) -> Event: ...


@dataclass(frozen=True, slots=True)
class MCPSetup:
    """What a task runner needs for MCP: the process's sessions, and the pipeline's
    servers (given to every role, after the role's own)."""

    hub: MCPHub = field(default_factory=MCPHub)
    shared: tuple[MCPServer, ...] = ()


def role_servers(role: Any, setup: MCPSetup | None) -> tuple[MCPServer, ...]:
    servers = tuple(getattr(type(role), "mcp", ())) + (setup.shared if setup else ())
    names = [s.name for s in servers]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise UserError(f"role {role.name!r}: two MCP servers named {twice[0]!r}; give one "
                        "a name=... of its own")
    return servers


async def open_toolset(setup: MCPSetup | None, role: Any, python_tools: Collection[str], *,
                       store: MCPStore, task: Task, lease: Lease, journal: Journal,
                       agent_id: str, tape: ToolTape | None = None) -> MCPToolset | None:
    """The task's MCP tools: listed from the servers at its first run (a journaled step),
    from the journal ever after. None when the role has no MCP servers.

    ``tape``: the task's model's tool tape. A replaying model's tape gives the lists and
    results its recording holds (no server is reached); a recording one keeps them."""
    servers = role_servers(role, setup)
    if not servers:
        return None
    if setup is None:
        raise UserError(f"role {role.name!r} declares MCP servers, but this task runner was "
                        "given no MCP hub (run it through a Coordinator)")
    n = journal.reserve()
    rec = journal.lookup(n, "tool", LIST_STEP)
    if rec is None:  # listed before the step is journaled: a server that fails writes nothing
        lists = {s.name: await _offered(setup.hub, s, tape) for s in servers}
        recorded = await journal.run(n, "tool", LIST_STEP, keys.digest(
            json.dumps(sorted(lists))), lambda: _done({"servers": lists}), wait_start=False)
    else:
        recorded = rec.output
    await import_jsonschema()  # its validators are compiled once, for this tool list
    tools = build_tools(servers, recorded["servers"], role=role.name,
                        python_tools=python_tools, approvals=type(role).needs_approval)
    return MCPToolset(setup.hub, tools, recorded["servers"], rec is not None, store=store,
                      task=task, lease=lease, journal=journal, agent_id=agent_id,
                      approvals=frozenset(type(role).needs_approval), tape=tape)


async def _done(output: Any) -> Outcome:
    return Outcome(output)


async def _offered(hub: MCPHub, server: MCPServer, tape: ToolTape | None
                   ) -> list[dict[str, Any]]:
    """The server's tools as journal data: from a replayed recording, or listed live."""
    if tape is not None and tape.replaying:
        taped = tape.tools(server.name)
        if taped is not None:
            return taped
    listed = offered(server, await _list(hub, server))
    if tape is not None:
        await tape.note_tools(server.name, listed)
    return listed


async def _list(hub: MCPHub, server: MCPServer) -> list[Any]:
    from orchestra.mcp.session import ServerGone

    conn = await hub.connection(server)
    for again in (False, True):
        try:
            return await conn.list_tools()
        except ServerGone:
            if again:
                raise await conn.failure("ended twice while listing its tools") from None
            conn = await hub.restart(server, conn)
        except TimeoutError:
            raise await conn.failure(f"did not list its tools within {server.timeout:g} s"
                                     ) from None
    raise AssertionError("unreachable")


class MCPToolset:
    """The MCP tools of one task attempt, run for the task's :class:`ToolRunner`."""

    def __init__(self, hub: MCPHub, tools: dict[str, MCPTool], lists: dict[str, Any],
                 replayed: bool, *, store: MCPStore, task: Task, lease: Lease,
                 journal: Journal, agent_id: str, approvals: frozenset[str],
                 tape: ToolTape | None = None) -> None:
        self.hub, self.tools, self.lists, self.replayed = hub, tools, lists, replayed
        self.tape = tape
        self.store, self.task, self.lease, self.journal = store, task, lease, journal
        self.agent_id, self.approvals = agent_id, approvals
        self._compared: set[str] = set()
        self._calls = 0  # calls this attempt sent (or began to)

    @property
    def schemas(self) -> list[ToolSchema]:
        return [t.schema() for t in self.tools.values()]

    def owns(self, name: str) -> bool:
        return name in self.tools

    def check(self, call: ToolCall) -> tuple[MCPTool, dict[str, Any]] | str:
        """The tool and its arguments, or what the model must fix (checked against the
        server's input schema before anything is sent)."""
        tool = self.tools[call.name]
        try:
            args = json.loads(call.arguments or "{}")
        except json.JSONDecodeError as exc:
            return (f"The arguments of your {call.name!r} call are not valid JSON ({exc.msg}): "
                    f"{call.arguments[:300]!r}. Send a JSON object.")
        if not isinstance(args, dict):
            return f"The arguments of {call.name!r} must be a JSON object, got {args!r:.200}."
        problem = tool.check(args)
        if problem is not None:
            return (f"Invalid arguments for {call.name!r}: {problem}. Fix them and call "
                    "again (nothing was sent).")
        return tool, args

    async def run(self, call: ToolCall, checked: tuple[MCPTool, dict[str, Any]],
                  n: int) -> ToolResult:
        """Replay the call, or send it; a server that cannot be reached fails the task
        while it has done nothing, and parks it for a person once it has (a failed task
        starts afresh: what it did would be done again)."""
        from orchestra.mcp.session import MCPServerError

        try:
            return await self._run(call, checked, n)
        except MCPServerError as exc:
            if not self._calls and not any(s.kind == "tool" and s.name != LIST_STEP
                                           for s in self.journal.recorded.values()):
                raise
            return await self._unreachable(call, checked, n, exc)

    async def _unreachable(self, call: ToolCall, checked: tuple[MCPTool, dict[str, Any]],
                           n: int, exc: Exception) -> ToolResult:
        tool, args = checked
        retry = self.task.retries
        for k in range(500):  # the approvals of earlier failures were approved: ask anew
            slot = rules.unreachable_step(n, k)
            approval = await self.store.find_approval(self.task.id, retry, slot)
            if approval is None:
                log.warning("MCP server unreachable; the task waits for a person",
                            run=self.task.run_id, task=self.task.id, server=tool.server.name)
                approval = await self.store.request_approval(
                    self.task.id, self.lease, retry=retry, step=slot,
                    tool=f"{tool.exposed} [server down]", arguments={
                        "server": tool.server.name, "tool": tool.name, "arguments": args,
                        "error": str(exc)[-1500:], "approve": "try the server again",
                        "deny": "tell the model the call was not sent"})
            if approval.status == "pending":
                raise ApprovalWait(approval.id, tool.exposed)
            if approval.status == "denied":
                return await self._record(call, tool, n, keys.digest(call.arguments), {
                    "content": f"MCP server {tool.server.name!r} could not be reached and a "
                    f"person decided not to wait for it ({approval.reason or 'no reason'}): "
                    f"this call to {tool.exposed!r} was not sent.", "is_error": True})
        raise exc

    async def _run(self, call: ToolCall, checked: tuple[MCPTool, dict[str, Any]],
                   n: int) -> ToolResult:
        tool, args = checked
        rec = self.journal.lookup(n, "tool", tool.exposed)
        if rec is not None:  # answered before: its recorded result, never sent again
            return _result(call, rec.output)
        prior = self.journal.recorded.get(n)  # found ``started``: it was in flight
        digest = keys.digest(call.arguments)
        attempts = 0
        if prior is None:
            if rules.needs_approval(tool.server, tool.name, tool.exposed, tool.annotations,
                                    self.approvals):
                denial = await self._approval(tool, args, n)
                if denial is not None:
                    return ToolResult(call, denial, True)
        else:
            attempts = prior.attempts
            verdict = rules.in_doubt(tool.server.policy(tool.name), tool.annotations)
            refusal = await self._in_doubt(tool, args, n, attempts, verdict, "a crash")
            if refusal is not None:
                return await self._record(call, tool, n, digest, refusal)
        return await self._send(call, tool, args, n, digest, attempts)

    async def _send(self, call: ToolCall, tool: MCPTool, args: dict[str, Any], n: int,
                    digest: str, attempts: int) -> ToolResult:
        from orchestra.mcp.session import ServerGone

        taped = self.tape.result(tool.server.name, tool.name, args) \
            if self.tape is not None and self.tape.replaying else None
        if taped is not None:  # a replayed recording's answer: journaled, never sent
            await self._start(tool, n, digest)
            self.journal.executed += 1
            return await self._record(call, tool, n, digest, taped)
        key = keys.idempotency_key(self.task, n)
        conn = await self.hub.connection(tool.server)
        # a call sent again anyway when in doubt (read-only, idempotent) need not wait for
        # its ``started`` record: it commits while the call is out (a crash before it did
        # leaves no trace, and the call is sent again as a new one: harmless, by its hints)
        resend = rules.in_doubt(tool.server.policy(tool.name), tool.annotations) == "resend"
        for restarted in (False, True):
            started: asyncio.Future[None] | None = None
            if resend and not restarted:
                started = asyncio.ensure_future(self._start(tool, n, digest))
                started.add_done_callback(_consume)
            else:  # durable before the request leaves: a crash from here on finds it
                await self._start(tool, n, digest)  # in flight
            attempts += 1
            self._calls += 1
            self.journal.executed += 1
            await self._compare(conn, tool.server)
            try:
                output = await _call(conn, tool, args, key)
            except ServerGone as gone:
                if started is not None:
                    await started
                if restarted:
                    raise await conn.failure(
                        f"ended again during a call to {tool.name!r}: {gone}") from None
                conn = await self.hub.restart(tool.server, conn)
                verdict = rules.in_doubt(tool.server.policy(tool.name), tool.annotations)
                refusal = await self._in_doubt(tool, args, n, attempts, verdict,
                                               "its server ending during the call")
                if refusal is not None:
                    return await self._record(call, tool, n, digest, refusal)
                continue
            if self.tape is not None:
                await self.tape.note_call(tool.server.name, tool.name, args, output)
            return await self._record(call, tool, n, digest, output, started=started)
        raise AssertionError("unreachable")

    def _start(self, tool: MCPTool, n: int, digest: str) -> Awaitable[None]:
        return self.store.start_step(self.task.id, self.task.retries, n, "tool", tool.exposed,
                                     digest, self.lease)

    async def _record(self, call: ToolCall, tool: MCPTool, n: int, digest: str,
                      output: dict[str, Any], *,
                      started: Awaitable[None] | None = None) -> ToolResult:
        if started is not None:  # committed while the call was out, nearly always
            await started
        await self.store.complete_step(
            StepResult(self.task.id, self.task.retries, n, "tool", tool.exposed, digest, output),
            self.lease, agent_id=self.agent_id)
        self.journal.committed(None)
        return _result(call, output)

    async def _in_doubt(self, tool: MCPTool, args: dict[str, Any], n: int, attempts: int,
                        verdict: InDoubt, cause: str) -> dict[str, Any] | None:
        """None: send it (again); else the result that tells the model it was not.
        Raises ApprovalWait while a person has not decided."""
        log.warning("MCP call in doubt: sent, no answer recorded", run=self.task.run_id,
                    task=self.task.id, agent=self.agent_id, step=n, server=tool.server.name,
                    tool=tool.name, cause=cause, decision=verdict)
        if verdict == "resend":  # read-only or idempotent (or so set): said, then sent
            await self.store.append_event(self.task.run_id, "mcp.call_resent", {
                "task": self.task.id, "step": n, "server": tool.server.name,
                "tool": tool.name, "cause": cause})
            return None
        lost = (f"This call to {tool.exposed!r} (MCP server {tool.server.name!r}) was sent "
                f"before {cause} and its answer was lost; it was not sent again")
        if verdict == "fail":
            return {"content": f"{lost} (in_doubt='fail'). It may or may not have taken "
                    "effect: check before repeating it.", "is_error": True}
        slot = rules.in_doubt_step(n, attempts)
        retry = self.task.retries
        approval = await self.store.find_approval(self.task.id, retry, slot)
        if approval is None:
            approval = await self.store.request_approval(
                self.task.id, self.lease, retry=retry, step=slot, tool=f"{tool.exposed} [in doubt]",
                arguments={"server": tool.server.name, "tool": tool.name, "arguments": args,
                           "idempotency_key": keys.idempotency_key(self.task, n),
                           "in_doubt": f"sent before {cause}, no answer recorded; approve "
                           "= send it again, deny = tell the model it was not"})
        if approval.status == "pending":
            raise ApprovalWait(approval.id, tool.exposed)
        if approval.status == "approved":
            return None
        by = f" ({approval.decided_by})" if approval.decided_by else ""
        return {"content": f"{lost}: a person decided not to{by}: "
                f"{approval.reason or 'no reason given'}. It may or may not have taken "
                "effect.", "is_error": True}

    async def _approval(self, tool: MCPTool, args: dict[str, Any], n: int) -> str | None:
        retry = self.task.retries
        approval = await self.store.find_approval(self.task.id, retry, n)
        if approval is None:
            approval = await self.store.request_approval(
                self.task.id, self.lease, retry=retry, step=n, tool=tool.exposed,
                arguments=args)
        if approval.status == "pending":
            raise ApprovalWait(approval.id, tool.exposed)
        if approval.status == "denied":
            return (f"A human denied this call to {tool.exposed!r}"
                    f"{' (' + approval.decided_by + ')' if approval.decided_by else ''}: "
                    f"{approval.reason or 'no reason given'}. Do not repeat it; adapt.")
        return None

    async def _compare(self, conn: Any, server: MCPServer) -> None:
        """Once per server and task: a replayed tool list that the server no longer
        matches is reported (the model keeps the recorded list)."""
        if not self.replayed or server.name in self._compared:
            return
        self._compared.add(server.name)
        diff = changes(self.lists.get(server.name, []), offered(server, await conn.list_tools()))
        if diff:
            log.warning("MCP server's tools changed since this task listed them",
                        run=self.task.run_id, task=self.task.id, server=server.name, **diff)
            await self.store.append_event(self.task.run_id, "mcp.tools_changed",
                                          {"task": self.task.id, "server": server.name, **diff})


async def _call(conn: Any, tool: MCPTool, args: dict[str, Any], key: str) -> dict[str, Any]:
    from orchestra.mcp.session import ServerGone

    s = tool.server
    try:
        result = await conn.call(tool.name, args, key, s.timeout)
    except TimeoutError:
        return {"content": f"MCP tool {tool.exposed!r} (server {s.name!r}) timed out after "
                f"{s.timeout:g} s; it may have taken effect: check before calling it again.",
                "is_error": True}
    except ServerGone:
        raise
    except Exception as exc:  # an error answer, or a result that breaks its output schema
        return {"content": f"MCP tool {tool.exposed!r} (server {s.name!r}) failed: "
                f"{type(exc).__name__}: {str(exc)[:2000]}", "is_error": True}
    return record_result(result)


def _consume(fut: asyncio.Future[None]) -> None:
    if not fut.cancelled():
        fut.exception()  # awaited by the call's end; a failure is raised there


def _result(call: ToolCall, output: dict[str, Any]) -> ToolResult:
    return ToolResult(call, str(output["content"]), bool(output["is_error"]))


def schemas(toolset: MCPToolset | None) -> Sequence[ToolSchema]:
    return toolset.schemas if toolset is not None else ()
