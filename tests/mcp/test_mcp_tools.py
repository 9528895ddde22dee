"""Tools from MCP servers, end to end on a real store with the tests' own server (stdio
and Streamable HTTP): the tool list and each call are journaled steps; arguments are
checked against the server's schema before sending; errors reach the model, not the task."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcp_helpers import drive, effects, http_server, lines, names, pipeline, steps

from orchestra import (
    MCPServer,
    ModelRequest,
    Role,
    ScriptedModel,
    ToolContext,
    reply,
    tool,
    tool_call,
)


def _role(*servers: MCPServer, **attrs: object) -> Role:
    cls = type("Worker", (Role,), {"__doc__": "You use the tools you are given.",
                                    "mcp": list(servers), "recall": False, **attrs})
    return cls()  # type: ignore[no-any-return]


async def test_a_role_calls_mcp_tools_each_call_a_journaled_step(tmp_path: Path) -> None:
    model = ScriptedModel([reply("", tool_call("append", {"text": "one"})),
                           reply("", tool_call("peek", {})), reply("done")])
    run, store, coord = await drive(tmp_path / "o.db", pipeline(_role(effects(tmp_path)), model))
    try:
        assert run.status == "completed", run.error
        # the model was offered the server's tools, as listed
        assert names(model.calls[0].tools) == ["peek", "put", "append", "noop", "touch", "shaped"]
        recorded = [(s.kind, s.name, s.status) for s in await steps(store, "r1")]
        assert recorded[0] == ("tool", "mcp.tools", "completed")
        assert ("tool", "append", "completed") in recorded
        assert ("tool", "peek", "completed") in recorded
        listing = (await steps(store, "r1"))[0].output["servers"]["effects"]
        append = next(t for t in listing if t["name"] == "append")
        assert append["annotations"] == {"destructiveHint": True, "idempotentHint": False}
        assert append["inputSchema"]["required"] == ["text"]
        # the call carried the step's idempotency key in _meta
        (effect,) = lines(tmp_path / "effects.log")
        key, text = effect.split()
        task = (await store.list_tasks("r1"))[0]
        assert text == "one" and key == f"r1:{task.id}:0:3"
        tool_msgs = [m.content for m in model.calls[2].messages if m.role == "tool"]
        assert tool_msgs == ["appended 'one' (effect 1)", "1"]
    finally:
        await coord.mcp.aclose()
        await store.close()


async def test_invalid_arguments_never_reach_the_server(tmp_path: Path) -> None:
    model = ScriptedModel([reply("", tool_call("append", {"txt": 1}),
                                 tool_call("append", {"text": 5}),
                                 tool_call("append", "{not json"), tool_call("peek", {})),
                           reply("done")])
    run, store, coord = await drive(tmp_path / "o.db", pipeline(_role(effects(tmp_path)), model))
    try:
        assert run.status == "completed", run.error
        seen = [m.content for m in model.calls[1].messages if m.role == "tool"]
        assert "Invalid arguments for 'append'" in seen[0] and "'text' is a required" in seen[0]
        assert "text: 5 is not of type 'string'" in seen[1]
        assert "not valid JSON" in seen[2] and seen[3] == "0"
        assert lines(tmp_path / "effects.log") == []
        assert not [s for s in await steps(store, "r1") if s.name == "append"]
    finally:
        await coord.mcp.aclose()
        await store.close()


async def test_error_results_go_to_the_model_not_the_task(tmp_path: Path) -> None:
    model = ScriptedModel([reply("", tool_call("shaped", {"sides": 3, "broken": True})),
                           reply("", tool_call("shaped", {"sides": 4})), reply("done")])
    run, store, coord = await drive(tmp_path / "o.db", pipeline(_role(effects(tmp_path)), model))
    try:
        assert run.status == "completed", run.error
        broken, fine = [m.content for m in model.calls[2].messages if m.role == "tool"]
        assert "MCP tool 'shaped' (server 'effects') failed" in broken
        assert "Invalid structured content" in broken
        assert json.loads(fine) == {"sides": 4}
        outputs = [s.output for s in await steps(store, "r1") if s.name == "shaped"]
        assert [o["is_error"] for o in outputs] == [True, False]
        assert outputs[1]["structured"] == {"sides": 4}
    finally:
        await coord.mcp.aclose()
        await store.close()


async def test_streamable_http_with_a_header_from_the_environment(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "s3cr3t-token-value"
    monkeypatch.setenv("EFFECTS_TOKEN", secret)
    with http_server(tmp_path) as url:
        server = MCPServer.http(url, headers={"Authorization": "Bearer ${EFFECTS_TOKEN}"},
                                name="remote", prefix="fx_", include=["append", "peek"])
        model = ScriptedModel([reply("", tool_call("fx_append", {"text": "web"})),
                               reply("", tool_call("fx_peek", {})), reply("done")])
        run, store, coord = await drive(tmp_path / "o.db", pipeline(_role(server), model))
        try:
            assert run.status == "completed", run.error
            assert names(model.calls[0].tools) == ["fx_peek", "fx_append"]
            assert [m.content for m in model.calls[2].messages if m.role == "tool"] == [
                "appended 'web' (effect 1)", "1"]
            assert [ln.split()[1] for ln in lines(tmp_path / "effects.log")] == ["web"]
        finally:
            await coord.mcp.aclose()
            await store.close()
    db = b"".join(p.read_bytes() for p in tmp_path.glob("o.db*"))
    assert secret.encode() not in db and b"Bearer" not in db


async def test_a_name_clash_fails_at_start_naming_both(tmp_path: Path) -> None:
    @tool
    async def append(ctx: ToolContext, text: str) -> str:
        """A Python tool of the same name."""
        return text

    model = ScriptedModel([reply("done")])
    run, store, coord = await drive(tmp_path / "o.db", pipeline(
        _role(effects(tmp_path), tools=(append,)), model))
    try:
        assert run.status == "failed"
        (task,) = await store.list_tasks("r1")
        assert task.error is not None
        assert "tool 'append' of MCP server 'effects' clashes with the role's Python tool " \
               "'append'" in task.error and "prefix" in task.error
        assert model.calls == []
    finally:
        await coord.mcp.aclose()
        await store.close()


async def test_two_servers_clash_unless_prefixed(tmp_path: Path) -> None:
    one, two = effects(tmp_path, name="one"), effects(tmp_path, name="two")
    run, store, coord = await drive(tmp_path / "o.db", pipeline(
        _role(one, two), ScriptedModel([reply("done")])))
    try:
        (task,) = await store.list_tasks("r1")
        assert run.status == "failed" and task.error is not None
        assert "tool 'peek' of MCP server 'two' clashes with tool 'peek' of MCP server 'one'" \
            in task.error
    finally:
        await coord.mcp.aclose()
        await store.close()
    two = effects(tmp_path, name="two", prefix="b_", exclude=["shaped"])
    model = ScriptedModel([reply("done")])
    run, store, coord = await drive(tmp_path / "p.db", pipeline(_role(one), model, mcp=[two]))
    try:
        assert run.status == "completed", run.error
        assert names(model.calls[0].tools) == ["peek", "put", "append", "noop", "touch",
                                               "shaped", "b_peek", "b_put", "b_append",
                                               "b_noop", "b_touch"]
        # both declarations reach the server the same way: one shared session (one process)
        assert len(coord.mcp._live) == 1
    finally:
        await coord.mcp.aclose()
        await store.close()


async def test_destructive_tools_wait_for_a_person(tmp_path: Path) -> None:
    server = effects(tmp_path, needs_approval="destructive")
    model = ScriptedModel([reply("", tool_call("peek", {}), tool_call("append", {"text": "x"})),
                           reply("done")])
    pipe = pipeline(_role(server), model)
    run, store, coord = await drive(tmp_path / "o.db", pipe)
    try:
        assert run.status == "waiting"
        (approval,) = await store.list_approvals("r1", status="pending")
        assert approval.tool == "append" and approval.arguments == {"text": "x"}
        assert lines(tmp_path / "effects.log") == []
        await store.decide_approval(approval.id, approved=True, by="test")
        run = await coord.resume("r1")
        assert run.status == "completed", run.error
        assert [ln.split()[1] for ln in lines(tmp_path / "effects.log")] == ["x"]
    finally:
        await coord.mcp.aclose()
        await store.close()


async def test_a_third_party_server_end_to_end(tmp_path: Path) -> None:
    """mcp-server-time, installed from the package index, driven by a scripted model."""
    time_server = MCPServer.stdio(str(Path(__import__("sys").executable).with_name(
        "mcp-server-time")), ["--local-timezone", "UTC"], name="time")

    def answer(req: ModelRequest) -> object:
        (result,) = [m.content for m in req.messages if m.role == "tool"]
        return reply(json.loads(result)["timezone"])

    model = ScriptedModel([reply("", tool_call("get_current_time", {"timezone": "Europe/Paris"})),
                           answer])
    run, store, coord = await drive(tmp_path / "o.db", pipeline(_role(time_server), model))
    try:
        assert run.status == "completed", run.error
        assert {"get_current_time", "convert_time"} <= set(names(model.calls[0].tools))
        (task,) = await store.list_tasks("r1")
        assert task.result == "Europe/Paris"
    finally:
        await coord.mcp.aclose()
        await store.close()
