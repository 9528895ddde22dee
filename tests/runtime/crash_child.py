"""Child process for crash tests: runs (or resumes) a small tool-using pipeline.

Every model call and every tool side effect appends a line (fsynced) to a file
so the parent can count what each process really issued. With ``json`` as the
protocol argument the model makes its tool calls through the JSON tool protocol
(:class:`JSONToolModel`): one JSON object a turn, no native calls.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

from pydantic import BaseModel

from orchestra import (
    Coordinator,
    FunctionModel,
    ModelRequest,
    NewTask,
    Pipeline,
    Role,
    SQLiteBlackboard,
    ToolContext,
    reply,
    tool,
    tool_call,
)
from orchestra.models.json_tools import JSONToolModel

TURNS = 5


def _append(path: Path, line: str) -> None:
    with open(path, "a") as f:
        f.write(line + "\n")
        f.flush()
        os.fsync(f.fileno())


class Total(BaseModel):
    total: int


def build(workdir: Path, protocol: str = "native") -> Pipeline:
    class Worker(Role):
        """You call effect TURNS times, then report the total."""

        output = Total

        @tool
        async def effect(self, ctx: ToolContext, n: int) -> int:
            """A side effect outside the store, keyed for idempotency."""
            await asyncio.sleep(0.03)
            _append(workdir / "effects.log", f"{ctx.idempotency_key} {n}")
            return n * 10

    async def script(req: ModelRequest) -> object:
        await asyncio.sleep(0.03)
        done = [int(m.content) for m in req.messages if m.role == "tool"]
        if len(done) < TURNS:
            out = reply("", tool_call("effect", {"n": len(done) + 1}))
        else:
            out = reply(f'{{"total": {sum(done)}}}')
        _append(workdir / "calls.log", f"{len(done)}")
        return out

    async def json_script(req: ModelRequest) -> object:
        # the protocol's view: no tools offered, results come back as user messages
        assert not req.tools and req.output is not None
        await asyncio.sleep(0.03)
        done = [int(m.content.split("\n", 1)[1]) for m in req.messages
                if m.role == "user" and m.content.startswith("Result of effect")]
        step = ({"name": "effect", "arguments": {"n": len(done) + 1}} if len(done) < TURNS
                else {"name": "final_answer", "arguments": {"total": sum(done)}})
        _append(workdir / "calls.log", f"{len(done)}")
        return reply(json.dumps(step))

    model = (JSONToolModel(FunctionModel(json_script)) if protocol == "json"
             else FunctionModel(script))
    return Pipeline("crash", roles=[Worker()], start=lambda i: [NewTask("worker", i)],
                    model=model)


async def main(mode: str, db: str, workdir: str, protocol: str = "native") -> None:
    store = await SQLiteBlackboard.open(db)
    coord = Coordinator(store, build(Path(workdir), protocol))
    if mode == "run":
        run = await coord.run("go", run_id="crashrun")
    else:
        run = await coord.resume("crashrun")
    print(run.status, flush=True)
    await store.close()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
