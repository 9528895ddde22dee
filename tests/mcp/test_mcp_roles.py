"""MCP tools as a role's own: its ``needs_approval`` may name a pipeline server's tools
(checked once they are listed), a call a small model writes as text reaches them, and an
in-doubt call sent again says so (a log line and an event)."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

from mcp_helpers import drive, effects, lines, pipeline
from structlog.testing import capture_logs

from orchestra import FunctionModel, Role, ScriptedModel, reply, tool_call


def _role(*, mcp: tuple[object, ...] = (), **attrs: object) -> Role:
    cls = type("Worker", (Role,), {"__doc__": "You use the tools you are given.",
                                    "mcp": list(mcp), "recall": False, **attrs})
    return cls()  # type: ignore[no-any-return]


async def test_needs_approval_names_a_pipeline_servers_tool(tmp_path: Path) -> None:
    model = ScriptedModel([reply("", tool_call("append", {"text": "x"})), reply("done")])
    role = _role(needs_approval=frozenset({"append"}))  # no server of its own
    run, store, coord = await drive(tmp_path / "o.db",
                                    pipeline(role, model, mcp=[effects(tmp_path)]))
    try:
        assert run.status == "waiting", run.error
        (approval,) = await store.list_approvals("r1", status="pending")
        assert approval.tool == "append" and lines(tmp_path / "effects.log") == []
    finally:
        await coord.mcp.aclose()
        await store.close()


async def test_needs_approval_naming_no_listed_tool_fails_at_start(tmp_path: Path) -> None:
    model = ScriptedModel([reply("done")])
    role = _role(needs_approval=frozenset({"apend"}))
    run, store, coord = await drive(tmp_path / "o.db",
                                    pipeline(role, model, mcp=[effects(tmp_path)]))
    try:
        assert run.status == "failed"
        (task,) = await store.list_tasks("r1")
        assert task.error is not None and "needs_approval names ['apend']" in task.error
        assert "'append'" in task.error  # the tools it could have meant
        assert model.calls == []
    finally:
        await coord.mcp.aclose()
        await store.close()


async def test_a_call_written_as_text_reaches_an_mcp_tool(tmp_path: Path) -> None:
    model = ScriptedModel([
        reply('<tool_call>{"name": "append", "arguments": {"text": "t"}}</tool_call>'),
        reply("done")])
    run, store, coord = await drive(tmp_path / "o.db",
                                    pipeline(_role(mcp=(effects(tmp_path),)), model))
    try:
        assert run.status == "completed", run.error
        assert [ln.split()[1] for ln in lines(tmp_path / "effects.log")] == ["t"]
    finally:
        await coord.mcp.aclose()
        await store.close()


async def test_a_call_in_doubt_sent_again_says_so(tmp_path: Path) -> None:
    """The server dies while a call it marks safe to repeat (here: set so) is out: the
    call is sent again to the new server, with a log line and an event saying so."""
    server = effects(tmp_path, delay=0.3, in_doubt="resend")
    model = FunctionModel(lambda req: reply("done") if any(m.role == "tool" for m in req.messages)
                          else reply("", tool_call("append", {"text": "e1"})))
    begun = tmp_path / "effects.begun"

    async def kill_when_sent() -> None:
        deadline = time.monotonic() + 20
        while not lines(begun):
            assert time.monotonic() < deadline, "the call was never sent"
            await asyncio.sleep(0.01)
        os.kill(int((tmp_path / "server.pid").read_text()), signal.SIGKILL)

    killer = asyncio.create_task(kill_when_sent())
    with capture_logs() as logs:
        run, store, coord = await drive(tmp_path / "o.db", pipeline(_role(mcp=(server,)), model))
    await killer
    try:
        assert run.status == "completed", run.error
        assert [ln.split()[1] for ln in lines(tmp_path / "effects.log")] == ["e1"]
        (said,) = [e for e in logs if e["event"].startswith("MCP call in doubt")]
        assert {k: said[k] for k in ("run", "agent", "server", "tool", "decision")} == {
            "run": "r1", "agent": "r1/worker", "server": "effects", "tool": "append",
            "decision": "resend"}
        assert "arguments" not in said and said["cause"] == "its server ending during the call"
        (event,) = [e for e in await store.events("r1") if e.kind == "mcp.call_resent"]
        assert event.data["tool"] == "append" and event.data["server"] == "effects"  # type: ignore[index]
    finally:
        await coord.mcp.aclose()
        await store.close()
