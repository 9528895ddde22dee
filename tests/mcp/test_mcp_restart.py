"""A server that dies mid-run: started again once. Dead between calls, nothing was sent to
it, so the next call simply goes to the new one; dead during a side-effecting call, that
call is in doubt (an approval), as after a crash of the worker."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

from mcp_helpers import drive, effects, lines, pipeline

from orchestra import (
    Coordinator,
    FunctionModel,
    MCPServer,
    ModelRequest,
    Role,
    SQLiteBlackboard,
    reply,
    tool_call,
)


def _role(*servers: MCPServer) -> Role:
    cls = type("Worker", (Role,), {"__doc__": "You use the tools you are given.",
                                    "mcp": list(servers), "recall": False})
    return cls()  # type: ignore[no-any-return]


def _kill_server(tmp: Path) -> int:
    pid = int((tmp / "server.pid").read_text())
    os.kill(pid, signal.SIGKILL)
    return pid


async def _until(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 20
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.01)


async def test_a_server_dead_between_calls_is_started_again(tmp_path: Path) -> None:
    pids: list[int] = []
    coords: list[Coordinator] = []

    async def script(req: ModelRequest) -> object:
        done = [m for m in req.messages if m.role == "tool"]
        if len(done) == 1:  # the server dies between the first call and the second
            pids.append(await asyncio.to_thread(_kill_server, tmp_path))
            live = list(coords[0].mcp._live.values())
            await _until(lambda: not any(c.alive for c in live), "its pipe to close")
        if len(done) < 2:
            return reply("", tool_call("append", {"text": f"e{len(done) + 1}"}))
        return reply("done")

    store = await SQLiteBlackboard.open(tmp_path / "o.db")
    coord = Coordinator(store, pipeline(_role(effects(tmp_path)), FunctionModel(script)))
    coords.append(coord)
    run = await coord.run("go", run_id="r1")
    try:
        assert run.status == "completed", run.error
        assert [ln.split()[1] for ln in lines(tmp_path / "effects.log")] == ["e1", "e2"]
        assert int((tmp_path / "server.pid").read_text()) != pids[0]  # a new server
        assert await store.list_approvals("r1") == []
    finally:
        await coord.mcp.aclose()
        await store.close()


async def test_a_server_dying_during_a_side_effect_puts_the_call_in_doubt(
        tmp_path: Path) -> None:
    model = FunctionModel(lambda req: reply("done") if any(m.role == "tool" for m in req.messages)
                          else reply("", tool_call("append", {"text": "e1"})))
    pipe = pipeline(_role(effects(tmp_path, delay=5.0)), model)
    begun = tmp_path / "effects.begun"

    async def kill_when_sent() -> None:
        await _until(lambda: bool(lines(begun)), "the call to be sent")
        _kill_server(tmp_path)

    killer = asyncio.create_task(kill_when_sent())
    run, store, coord = await drive(tmp_path / "o.db", pipe)
    await killer
    try:
        assert run.status == "waiting", run.error
        (approval,) = await store.list_approvals("r1", status="pending")
        assert approval.tool == "append [in doubt]"
        assert approval.arguments["arguments"] == {"text": "e1"}  # type: ignore[index]
        assert "its server ending during the call" in approval.arguments["in_doubt"]  # type: ignore[index]
        # `orchestra approvals` lists it, naming the server, the tool and its arguments
        cli = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "orchestra.cli.main", "approvals", "--db",
            str(tmp_path / "o.db"), stdout=asyncio.subprocess.PIPE)
        listed = (await cli.communicate())[0].decode()
        assert f"{approval.id}  run r1  append [in doubt]" in listed
        assert '"server": "effects", "tool": "append", "arguments": {"text": "e1"}' in listed
        await store.decide_approval(approval.id, approved=False, by="test", reason="no need")
        run = await coord.resume("r1")
        assert run.status == "completed", run.error
        tool_msgs = [m.content for m in await store.get_messages("r1/worker")
                     if m.role == "tool"]
        assert "was not sent again: a person decided not to (test): no need" in tool_msgs[0]
        assert lines(tmp_path / "effects.log") == []  # killed before its effect
    finally:
        await coord.mcp.aclose()
        await store.close()


async def test_a_server_that_cannot_restart_parks_a_task_that_did_work(tmp_path: Path) -> None:
    """Failing the task would start it afresh and send e1 again: it waits for a person."""
    coords: list[Coordinator] = []
    downed: list[bool] = []

    async def script(req: ModelRequest) -> object:
        done = [m for m in req.messages if m.role == "tool"]
        if len(done) == 1 and not downed:  # the server goes down, for good
            downed.append(True)
            await asyncio.to_thread((tmp_path / "refuse").write_text, "")
            await asyncio.to_thread(_kill_server, tmp_path)
            live = list(coords[0].mcp._live.values())
            await _until(lambda: not any(c.alive for c in live), "its pipe to close")
        if len(done) < 2:
            return reply("", tool_call("append", {"text": f"e{len(done) + 1}"}))
        return reply("done")

    store = await SQLiteBlackboard.open(tmp_path / "o.db")
    coord = Coordinator(store, pipeline(_role(effects(tmp_path)), FunctionModel(script)))
    coords.append(coord)
    try:
        run = await coord.run("go", run_id="r1")
        assert run.status == "waiting", run.error
        (approval,) = await store.list_approvals("r1", status="pending")
        assert approval.tool == "append [server down]"
        assert "refusing to start (the REFUSE file exists)" in approval.arguments["error"]  # type: ignore[index]
        (tmp_path / "refuse").unlink()  # someone fixed the server
        await store.decide_approval(approval.id, approved=True, by="test")
        run = await coord.resume("r1")
        assert run.status == "completed", run.error
        assert [ln.split()[1] for ln in lines(tmp_path / "effects.log")] == ["e1", "e2"]
    finally:
        await coord.mcp.aclose()
        await store.close()
