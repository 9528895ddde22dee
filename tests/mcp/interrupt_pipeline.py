"""A pipeline for ``orchestra run`` whose role calls the tests' own MCP server (stdio) turn
after turn, each call slow: the Ctrl-C test interrupts it while the server runs.

``orchestra run --pipeline tests.mcp.interrupt_pipeline:build --input '{"work": DIR}'``
(the repository root on ``PYTHONPATH``); the server writes its pid to ``DIR/server.pid``
and ``begin KEY`` to ``DIR/effects.begun`` as each call arrives.
"""

from __future__ import annotations

import sys
from pathlib import Path

from orchestra import (
    FunctionModel,
    MCPServer,
    ModelRequest,
    NewTask,
    Pipeline,
    Role,
    reply,
    tool_call,
)

REF = "tests.mcp.interrupt_pipeline:build"
SERVER = Path(__file__).with_name("effects_server.py")


def build(run_input: dict[str, str]) -> Pipeline:
    work = Path(run_input["work"])
    server = MCPServer.stdio(sys.executable, [str(SERVER)], name="effects", env={
        "EFFECTS": str(work / "effects.log"), "APPEND_DELAY": "0.2",
        "PIDFILE": str(work / "server.pid")})

    class Writer(Role):
        """You append a line each turn."""

        mcp = [server]
        recall = False
        max_turns = 500

    def script(req: ModelRequest) -> object:
        done = sum(1 for m in req.messages if m.role == "tool")
        return reply("", tool_call("append", {"text": f"e{done + 1}"}))

    return Pipeline("mcp-interrupt", roles=[Writer()], start=lambda i: [NewTask("writer", i)],
                    model=FunctionModel(script))
