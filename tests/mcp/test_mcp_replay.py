"""A run recorded with MCP tools replays from the journal: a fork resumed with its servers
absent gives byte-identical messages and results; a resumed task keeps the tool list it
recorded, and a server whose tools changed meanwhile is reported, not mixed in."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from mcp_helpers import drive, effects, lines, names, pipeline

from orchestra import (
    Coordinator,
    MCPServer,
    Role,
    ScriptedModel,
    SQLiteBlackboard,
    reply,
    tool_call,
)


def _role(*servers: MCPServer, **attrs: object) -> Role:
    cls = type("Worker", (Role,), {"__doc__": "You use the tools you are given.",
                                    "mcp": list(servers), "recall": False, **attrs})
    return cls()  # type: ignore[no-any-return]


def _script() -> list[object]:
    return [reply("", tool_call("append", {"text": "one"}), tool_call("put", {
        "name": "k", "value": "v"})), reply("", tool_call("peek", {})), reply("done")]


async def _history(store: SQLiteBlackboard, run_id: str) -> str:
    (task,) = await store.list_tasks(run_id)
    msgs = await store.get_messages(f"{run_id}/worker")
    steps = await store.get_steps(task.id, task.retries)
    return json.dumps({
        "messages": [[m.role, m.content, [dataclasses.astuple(c) for c in m.tool_calls],
                      m.tool_call_id, m.name] for m in msgs],
        "steps": [[s.step, s.kind, s.name, s.status, s.output] for s in steps],
        "result": task.result}, sort_keys=True)


async def test_a_fork_replays_with_the_servers_absent(tmp_path: Path) -> None:
    run, store, coord = await drive(tmp_path / "o.db", pipeline(
        _role(effects(tmp_path)), ScriptedModel(_script())))
    try:
        await coord.mcp.aclose()
        assert run.status == "completed", run.error
        original = await _history(store, "r1")
        # the run as it was just before its last model call: every tool step recorded
        at = max(e.seq for e in await store.events("r1")
                 if e.kind == "step.completed" and e.data["kind"] == "tool")
        await store.fork_run("r1", at, fork_id="f1")
        absent = MCPServer.stdio("/nonexistent/effects-server", name="effects")
        model = ScriptedModel([reply("done")])
        coord = Coordinator(store, pipeline(_role(absent), model))
        fork = await coord.resume("f1")
        assert fork.status == "completed", fork.error
        assert (await _history(store, "f1")).replace("f1", "r1") == original
        assert names(model.calls[0].tools) == ["peek", "put", "append", "noop", "touch",
                                               "shaped"]
        assert len(lines(tmp_path / "effects.log")) == 1  # nothing was sent again
        assert coord.mcp._live == {}  # no server was started
    finally:
        await store.close()


async def test_a_resumed_task_keeps_its_tools_and_reports_a_changed_server(
        tmp_path: Path) -> None:
    first = ScriptedModel([reply("", tool_call("append", {"text": "x"})), reply("done")])
    run, store, coord = await drive(tmp_path / "o.db", pipeline(
        _role(effects(tmp_path), needs_approval=frozenset({"append"})), first))
    await coord.mcp.aclose()
    assert run.status == "waiting"
    (approval,) = await store.list_approvals("r1", status="pending")
    await store.decide_approval(approval.id, approved=True, by="test")
    await store.close()
    # the server was upgraded meanwhile: it now lists one more tool
    again = ScriptedModel([reply("done")])  # the first reply replays from the journal
    run, store, coord = await drive(tmp_path / "o.db", pipeline(_role(
        effects(tmp_path, extra=True), needs_approval=frozenset({"append"})), again),
        resume=True)
    try:
        assert run.status == "completed", run.error
        assert "shout" not in names(again.calls[-1].tools)  # the recorded list, not today's
        (changed,) = [e for e in await store.events("r1") if e.kind == "mcp.tools_changed"]
        assert changed.data["server"] == "effects" and changed.data["added"] == ["shout"]
        assert [ln.split()[1] for ln in lines(tmp_path / "effects.log")] == ["x"]
    finally:
        await coord.mcp.aclose()
        await store.close()
