"""Child process for crash tests: runs (or resumes) a small tool-using pipeline.

Every model call and every tool side effect appends a line (fsynced) to a file
so the parent can count what each process really issued.
"""

from __future__ import annotations

import asyncio
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

TURNS = 5


def _append(path: Path, line: str) -> None:
    with open(path, "a") as f:
        f.write(line + "\n")
        f.flush()
        os.fsync(f.fileno())


class Total(BaseModel):
    total: int


def build(workdir: Path) -> Pipeline:
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

    return Pipeline("crash", roles=[Worker()], start=lambda i: [NewTask("worker", i)],
                    model=FunctionModel(script))


async def main(mode: str, db: str, workdir: str) -> None:
    store = await SQLiteBlackboard.open(db)
    coord = Coordinator(store, build(Path(workdir)))
    if mode == "run":
        run = await coord.run("go", run_id="crashrun")
    else:
        run = await coord.resume("crashrun")
    print(run.status, flush=True)
    await store.close()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
