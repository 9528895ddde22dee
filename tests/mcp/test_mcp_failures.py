"""Bad inputs around MCP servers: each a clear error naming the server, its command and
the tail of its stderr; the task fails (resumably) and nothing in the store is lost."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp_helpers import drive, effects, pipeline

from orchestra import MCPServer, Role, ScriptedModel, UserError, reply
from orchestra.mcp import rules
from orchestra.mcp.declare import resolve


def _role(*servers: MCPServer) -> Role:
    cls = type("Worker", (Role,), {"__doc__": "You use the tools you are given.",
                                    "mcp": list(servers)})
    return cls()  # type: ignore[no-any-return]


async def _task_error(tmp_path: Path, server: MCPServer) -> str:
    model = ScriptedModel([reply("done")])
    run, store, coord = await drive(tmp_path / "o.db", pipeline(_role(server), model))
    try:
        assert run.status == "failed" and model.calls == []
        (task,) = await store.list_tasks("r1")
        assert task.status == "failed" and task.error is not None
        assert (await store.get_run("r1")).input == "go"  # the run is intact: resumable
        return task.error
    finally:
        await coord.mcp.aclose()
        await store.close()


async def test_a_command_that_does_not_exist(tmp_path: Path) -> None:
    error = await _task_error(tmp_path, MCPServer.stdio("mcp-server-nope", ["--repo", "."]))
    assert error == ("MCP server 'mcp-server-nope' (stdio: mcp-server-nope --repo .) command "
                     "'mcp-server-nope' not found on PATH; install it, or give its full path "
                     "in MCPServer.stdio(...)")


async def test_a_server_that_exits_at_start(tmp_path: Path) -> None:
    error = await _task_error(tmp_path, effects(tmp_path, "stdio", "exit"))
    assert error.startswith("MCP server 'effects' (stdio: ")
    assert "effects_server.py stdio exit) could not start" in error
    assert error.endswith("--- its stderr (last lines) ---\n"
                          "effects server: refusing to start (mode exit)")


async def test_a_server_that_hangs(tmp_path: Path) -> None:
    error = await _task_error(tmp_path, effects(tmp_path, "stdio", "hang", start_timeout=1.5))
    assert "did not answer the MCP handshake within 1.5 s" in error
    assert error.endswith("effects server: hanging")


async def test_a_server_that_answers_malformed_json_rpc(tmp_path: Path) -> None:
    error = await _task_error(tmp_path, effects(tmp_path, "stdio", "garbage", start_timeout=1.5))
    assert "did not answer the MCP handshake within 1.5 s; it wrote malformed JSON-RPC" in error
    assert "effects server: got '{" in error


async def test_an_unset_header_variable_is_named_not_guessed(tmp_path: Path) -> None:
    server = MCPServer.http("http://127.0.0.1:9/mcp", headers={"X-Key": "env:NOPE_KEY_39"})
    error = await _task_error(tmp_path, server)
    assert "header 'X-Key' of MCP server '127.0.0.1_9' names the environment variable " \
           "NOPE_KEY_39, which is not set" in error


def test_declarations_refuse_mistakes_early() -> None:
    with pytest.raises(UserError, match="args must be a list of strings"):
        MCPServer.stdio("mcp-server-git", "--repository .")  # type: ignore[arg-type]
    with pytest.raises(UserError, match="url must start with http"):
        MCPServer.http("localhost:8000/mcp")
    with pytest.raises(UserError, match="in_doubt='maybe'"):
        MCPServer.stdio("x", in_doubt="maybe")  # type: ignore[arg-type]
    with pytest.raises(UserError, match="exclude= takes tool names"):
        MCPServer.stdio("x", exclude="append")
    server = MCPServer.http("https://h.example/mcp", headers={"A": "Bearer ${T}"})
    assert "Bearer" not in repr(server) and server.name == "h.example"
    assert MCPServer.http("https://u:pw@h.example/mcp").where() == "https://h.example/mcp"
    assert resolve("Bearer ${T}", "a header", {"T": "abc"}) == "Bearer abc"
    assert resolve("env:T", "a header", {"T": "abc"}) == "abc"


def test_the_in_doubt_rule() -> None:
    assert rules.in_doubt(None, {"readOnlyHint": True}) == "resend"
    assert rules.in_doubt(None, {"idempotentHint": True}) == "resend"
    assert rules.in_doubt(None, {"destructiveHint": True}) == "ask"
    assert rules.in_doubt(None, {}) == "ask"  # unmarked: it may act, so a person decides
    assert rules.in_doubt("fail", {"readOnlyHint": True}) == "fail"
    assert rules.in_doubt("resend", {}) == "resend"
    assert MCPServer.stdio("x", in_doubt={"append": "fail"}).policy("append") == "fail"
    assert MCPServer.stdio("x", in_doubt={"append": "fail"}).policy("peek") is None
    assert rules.destructive({}) and not rules.destructive({"readOnlyHint": True})
    assert not rules.destructive({"destructiveHint": False})
    assert rules.in_doubt_step(7, 1) != rules.in_doubt_step(7, 2) != 7
