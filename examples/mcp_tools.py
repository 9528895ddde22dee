"""Tools from an MCP server, journaled: a role takes ``mcp-server-time``'s tools (a real
third-party server from the package index, offline), and a scripted model asks the time in
Paris and in Tokyo. Run it twice: the second run is a fork of the first, resumed from its
journal with the server *absent* (a command that does not exist), and answers the same.

    pip install -e '.[mcp]' mcp-server-time    # (`.[dev]` has both)
    python examples/mcp_tools.py
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from orchestra import (
    Coordinator,
    FunctionModel,
    MCPServer,
    ModelRequest,
    NewTask,
    Pipeline,
    Role,
    SQLiteBlackboard,
    reply,
    tool_call,
)

TIME_SERVER = shutil.which("mcp-server-time") or str(Path(sys.executable).with_name(
    "mcp-server-time"))


def clock_role(command: str) -> Role:
    class Clock(Role):
        """You tell the time in the cities you are asked about, with the time tools."""

        # read-only tools (the server says so): sent again if a crash cuts one short
        mcp = [MCPServer.stdio(command, ["--local-timezone", "UTC"], name="time")]

    return Clock()


def offline_model(request: ModelRequest) -> Any:
    """Asks the time in two cities, then answers with what the tools said."""
    results = [m.content for m in request.messages if m.role == "tool"]
    if not results:
        return reply("", tool_call("get_current_time", {"timezone": "Europe/Paris"}, id="c1"),
                     tool_call("get_current_time", {"timezone": "Asia/Tokyo"}, id="c2"))
    return reply("; ".join(f"{t['timezone']}: {t['datetime']}"
                           for t in map(json.loads, results)))


def make_pipeline(command: str) -> Pipeline:
    return Pipeline("clock", roles=[clock_role(command)],
                    start=lambda inp: [NewTask("clock", inp)], model=FunctionModel(offline_model))


async def main(db: Path) -> None:
    store = await SQLiteBlackboard.open(db)
    try:
        coordinator = Coordinator(store, make_pipeline(TIME_SERVER))
        run = await coordinator.run("what time is it?")
        await coordinator.mcp.aclose()  # (the process's end would stop the server too)
        (task,) = await store.list_tasks(run.id)
        print(f"run {run.id}: {run.status}: {task.result}")
        for step in await store.get_steps(task.id, task.retries):
            print(f"  step {step.step}: {step.kind} {step.name}")
        # a fork just before the answer, resumed with no server at all: from the journal
        at = max(e.seq for e in await store.events(run.id) if e.kind == "step.completed"
                 and e.data["kind"] == "tool")
        fork = await store.fork_run(run.id, at)
        offline = Coordinator(store, make_pipeline("/nonexistent/mcp-server-time"))
        fork = await offline.resume(fork.id)
        (again,) = await store.list_tasks(fork.id)
        print(f"fork {fork.id} (server absent): {fork.status}, same answer: "
              f"{again.result == task.result}")
    finally:
        await store.close()


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(main(Path(tmp) / "clock.db"))
