"""Child process for the MCP crash tests: runs (or resumes) a pipeline whose model calls
the tests' own server's ``append`` (a side effect) and ``put`` (idempotent) each turn.

``python mcp_child.py run|resume DB WORKDIR``; prints the run's status.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from mcp_helpers import effects

from orchestra import (
    Coordinator,
    FunctionModel,
    ModelRequest,
    NewTask,
    Pipeline,
    Role,
    SQLiteBlackboard,
    reply,
    tool_call,
)

TURNS = 4
DELAY = 0.12  # append waits this long before and after its effect: a kill lands in flight


def build(workdir: Path) -> Pipeline:
    class Writer(Role):
        """You append e1..e4, one a turn, then say done."""

        mcp = [effects(workdir, delay=DELAY)]
        recall = False

    def script(req: ModelRequest) -> object:
        done = sum(1 for m in req.messages if m.role == "tool" and m.name == "append")
        if done < TURNS:
            k = done + 1
            return reply("", tool_call("append", {"text": f"e{k}"}, id=f"a{k}"),
                         tool_call("put", {"name": f"k{k}", "value": "v"}, id=f"p{k}"))
        return reply("done")

    return Pipeline("mcpcrash", roles=[Writer()], start=lambda i: [NewTask("writer", i)],
                    model=FunctionModel(script))


async def main(mode: str, db: str, workdir: str) -> None:
    store = await SQLiteBlackboard.open(db)
    coord = Coordinator(store, build(Path(workdir)))
    try:
        run = await (coord.run("go", run_id="crash") if mode == "run" else coord.resume("crash"))
        print(run.status, flush=True)
    finally:
        await coord.mcp.aclose()
        await store.close()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
