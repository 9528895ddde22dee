"""A task's MCP tools: one more :class:`~orchestra.runtime.tool_calls.ToolSource`.

The rules (issue 39): the list the model is offered is a step, replayed on resume; each
``tools/call`` is checked against the server's input schema, carries the step's
idempotency key in ``_meta``, and is journaled ``started`` (durably) before it is sent. A
call found in flight (at a crash, or when its server ended during it) is sent again only
when :func:`orchestra.mcp.rules.in_doubt` says so; otherwise the task waits for a person.

The tool runner approves, journals and traces these calls as it does Python tools'
(``runtime.tool_calls``); this module decides what only an MCP call has: the in-doubt
rule and a server that cannot be reached (:class:`MCPCall`, the step's ``SendRules``).
``orchestra.mcp`` is the driver that speaks to the servers.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from orchestra._errors import UserError
from orchestra._log import get_logger
from orchestra._types import JSON, Event, Task
from orchestra.mcp import rules
from orchestra.mcp.calls import call_tool, list_tools
from orchestra.mcp.declare import InDoubt, MCPServer
from orchestra.mcp.hub import MCPSetup
from orchestra.mcp.listing import LIST_STEP, MCPTool, build_tools, changes, import_jsonschema
from orchestra.mcp.listing import offered as offered_tools
from orchestra.models.base import ToolCall, ToolSchema
from orchestra.models.tape import ToolTape
from orchestra.runtime import keys
from orchestra.runtime.journal import Journal, LostAnswer, Outcome
from orchestra.runtime.tool_calls import ApprovalGate, Checked, StepPlan
from orchestra.store.protocol import ApprovalRequests, Lease

if TYPE_CHECKING:
    from orchestra.mcp.session import Connection, MCPServerError

log = get_logger("orchestra.mcp")


class MCPStore(ApprovalRequests, Protocol):
    """What MCP calls write beside their steps: approvals, and their own events (a call
    sent again, a server's tools changed)."""

    async def append_event(self, run_id: str, kind: str, data: JSON) -> Event: ...


def role_servers(role: Any, setup: MCPSetup | None) -> tuple[MCPServer, ...]:
    servers = tuple(getattr(type(role), "mcp", ())) + (setup.shared if setup else ())
    names = [s.name for s in servers]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise UserError(f"role {role.name!r}: two MCP servers named {twice[0]!r}; give one "
                        "a name=... of its own")
    return servers


async def open_mcp_tools(setup: MCPSetup | None, role: Any, python_tools: Collection[str], *,
                         store: MCPStore, task: Task, lease: Lease, journal: Journal,
                         agent_id: str, tape: ToolTape | None = None) -> MCPTools | None:
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
        lists = {s.name: await _offered(setup, s, tape) for s in servers}
        recorded = await journal.run(n, "tool", LIST_STEP, keys.digest(
            json.dumps(sorted(lists))), lambda: _done({"servers": lists}), wait_start=False)
    else:
        recorded = rec.output
    await import_jsonschema()  # its validators are compiled once, for this tool list
    tools = build_tools(servers, recorded["servers"], role=role.name,
                        python_tools=python_tools, approvals=type(role).needs_approval)
    return MCPTools(setup, tools, recorded["servers"], rec is not None, store=store,
                    task=task, lease=lease, journal=journal, agent_id=agent_id,
                    approvals=frozenset(type(role).needs_approval), tape=tape)


async def _done(output: Any) -> Outcome:
    return Outcome(output)


async def _offered(setup: MCPSetup, server: MCPServer, tape: ToolTape | None
                   ) -> list[dict[str, Any]]:
    """The server's tools as journal data: from a replayed recording, or listed live."""
    if tape is not None and tape.replaying:
        taped = tape.tools(server.name)
        if taped is not None:
            return taped
    listed = offered_tools(server, await list_tools(setup.hub, server))
    if tape is not None:
        await tape.note_tools(server.name, listed)
    return listed


class MCPTools:
    """The MCP tools of one task attempt, a source of the task's tool runner."""

    def __init__(self, setup: MCPSetup, tools: dict[str, MCPTool], lists: dict[str, Any],
                 replayed: bool, *, store: MCPStore, task: Task, lease: Lease,
                 journal: Journal, agent_id: str, approvals: frozenset[str],
                 tape: ToolTape | None = None) -> None:
        self.hub, self.tools, self.lists, self.replayed = setup.hub, tools, lists, replayed
        self.tape = tape
        self.store, self.task, self.journal, self.agent_id = store, task, journal, agent_id
        self.approvals = approvals
        self.gate = ApprovalGate(store, task, lease)
        self._compared: set[str] = set()
        self.calls = 0  # calls this attempt sent (or began to)

    @property
    def schemas(self) -> list[ToolSchema]:
        return [ToolSchema(t.exposed, t.description, t.input_schema)
                for t in self.tools.values()]

    def owns(self, name: str) -> bool:
        return name in self.tools

    def check(self, call: ToolCall) -> Checked | str:
        """The call checked against the server's input schema before anything is sent,
        or what the model must fix."""
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
        return Checked(call, tool.exposed, args, rules.needs_approval(
            tool.server, tool.name, tool.exposed, tool.annotations, self.approvals), tool, self)

    def plan(self, checked: Checked, n: int) -> StepPlan:
        """A call whose server marks it read-only or idempotent (or is set to ``resend``)
        need not wait for its ``started`` record: a crash before it commits leaves no
        trace, and the call is sent again as a new one (harmless, by its hints)."""
        call = MCPCall(self, checked.tool, checked.arguments, n)
        return StepPlan(call.send, wait_start=call.verdict != "resend", rules=call)

    def done_nothing(self) -> bool:
        """Nothing a fresh attempt would do again: no call sent, no tool step recorded."""
        return not self.calls and not any(s.kind == "tool" and s.name != LIST_STEP
                                          for s in self.journal.recorded.values())

    async def in_doubt(self, call: MCPCall, sent: int, cause: str) -> Outcome | None:
        """A call sent before ``cause`` with no answer recorded: None to send it again,
        else the result that tells the model it was not. Waits for a person (raises
        ``ApprovalWait``) when the rule says ask."""
        tool, n, verdict = call.tool, call.n, call.verdict
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
            return _refused(f"{lost} (in_doubt='fail'). It may or may not have taken "
                            "effect: check before repeating it.")
        approval = await self.gate.decided(
            rules.in_doubt_step(n, sent), f"{tool.exposed} [in doubt]", {
                "server": tool.server.name, "tool": tool.name, "arguments": call.args,
                "idempotency_key": keys.idempotency_key(self.task, n),
                "in_doubt": f"sent before {cause}, no answer recorded; approve = send it "
                "again, deny = tell the model it was not"}, call=tool.exposed)
        if approval.status == "approved":
            return None
        by = f" ({approval.decided_by})" if approval.decided_by else ""
        return _refused(f"{lost}: a person decided not to{by}: "
                        f"{approval.reason or 'no reason given'}. It may or may not have "
                        "taken effect.")

    async def unreachable(self, call: MCPCall, exc: MCPServerError) -> Outcome:
        """A server that cannot be reached fails the task while it has done nothing, and
        parks it for a person once it has (a failed task starts afresh: what it did would
        be done again). Denied: the result that tells the model the call was not sent."""
        if self.done_nothing():
            raise exc
        tool = call.tool
        log.warning("MCP server unreachable; the task waits for a person",
                    run=self.task.run_id, task=self.task.id, server=tool.server.name)
        for k in range(500):  # the approvals of earlier failures were approved: ask anew
            approval = await self.gate.decided(
                rules.unreachable_step(call.n, k), f"{tool.exposed} [server down]", {
                    "server": tool.server.name, "tool": tool.name, "arguments": call.args,
                    "error": str(exc)[-1500:], "approve": "try the server again",
                    "deny": "tell the model the call was not sent"}, call=tool.exposed)
            if approval.status == "denied":
                return _refused(
                    f"MCP server {tool.server.name!r} could not be reached and a person "
                    f"decided not to wait for it ({approval.reason or 'no reason'}): this "
                    f"call to {tool.exposed!r} was not sent.")
        raise exc

    async def compare(self, conn: Connection, server: MCPServer) -> None:
        """Once per server and task: a replayed tool list that the server no longer
        matches is reported (the model keeps the recorded list)."""
        if not self.replayed or server.name in self._compared:
            return
        self._compared.add(server.name)
        diff = changes(self.lists.get(server.name, []),
                       offered_tools(server, await conn.list_tools()))
        if diff:
            log.warning("MCP server's tools changed since this task listed them",
                        run=self.task.run_id, task=self.task.id, server=server.name, **diff)
            await self.store.append_event(self.task.run_id, "mcp.tools_changed",
                                          {"task": self.task.id, "server": server.name, **diff})


class MCPCall:
    """One MCP call as its journaled step sends it (its ``SendRules``): a call in flight
    at a crash is decided before its server is reached; one cut short by its server's end
    is decided once the server is started again (once per call)."""

    def __init__(self, tools: MCPTools, tool: MCPTool, args: dict[str, Any], n: int) -> None:
        self.tools, self.tool, self.args, self.n = tools, tool, args, n
        self.verdict: InDoubt = rules.in_doubt(tool.server.policy(tool.name), tool.annotations)
        self.taped: dict[str, Any] | None = None
        """A replayed recording's answer: journaled as the step's, never sent."""
        self.looked = False  # the tape was read for this call
        self.conn: Connection | None = None
        self.gone: str | None = None  # how the connection ended during the last send
        self.restarted = False

    async def before_send(self, sent: int, lost: str | None) -> Outcome | None:
        crashed = lost is not None and self.gone is None
        if crashed and lost is not None:
            refusal = await self.tools.in_doubt(self, sent, lost)
            if refusal is not None:
                return refusal
        tape = self.tools.tape
        if not self.looked and tape is not None and tape.replaying:  # read once
            self.taped = tape.result(self.tool.server.name, self.tool.name, self.args)
        self.looked = True
        if self.taped is None:
            from orchestra.mcp.session import MCPServerError

            try:
                self.conn = await self._reach()
            except MCPServerError as exc:
                return await self.tools.unreachable(self, exc)
        if lost is not None and not crashed:
            return await self.tools.in_doubt(self, sent, lost)
        return None

    async def _reach(self) -> Connection:
        """The server's live session; after it ended during a send, a new one (once)."""
        hub, server, conn, gone = self.tools.hub, self.tool.server, self.conn, self.gone
        if conn is None or gone is None:
            return await hub.connection(server)
        if self.restarted:
            raise await conn.failure(
                f"ended again during a call to {self.tool.name!r}: {gone}") from None
        self.restarted = True
        return await hub.restart(server, conn)

    async def send(self) -> Outcome:
        if self.taped is not None:
            return Outcome(self.taped)
        from orchestra.mcp.session import ServerGone

        conn, tool, tools = self.conn, self.tool, self.tools
        assert conn is not None  # reached by before_send
        self.gone = None
        tools.calls += 1
        await tools.compare(conn, tool.server)
        try:
            output = await call_tool(conn, tool, self.args,
                                     keys.idempotency_key(tools.task, self.n))
        except ServerGone as gone:
            self.gone = str(gone)
            raise LostAnswer("its server ending during the call") from None
        if tools.tape is not None:
            await tools.tape.note_call(tool.server.name, tool.name, self.args, output)
        return Outcome(output)


def _refused(text: str) -> Outcome:
    return Outcome({"content": text, "is_error": True})


def schemas(tools: MCPTools | None) -> Sequence[ToolSchema]:
    return tools.schemas if tools is not None else ()
