"""A tool a human must approve: the run parks, someone decides, the run resumes.

A releaser role wants to publish a version; ``publish`` is in ``needs_approval``, so
the run stops with status ``waiting`` (exit code 4) until a person decides, from
the command line or from Python, across any number of restarts:

    python examples/approval.py                     # starts the run; it parks
    orchestra approve APPROVAL_ID --db approval.db  # decide from the CLI ...
    orchestra resume RUN_ID --db approval.db        # ... and continue (or run this again)

    python examples/approval.py --approve           # or decide from Python and resume

The pipeline is built by the top-level ``make_pipeline(run_input)``, so ``orchestra
resume`` finds it with no ``ref`` to write (run from the checkout's root). The
``publish`` tool runs once, after the approval, however often the run is resumed.
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import sys
from pathlib import Path
from typing import Any

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


class Releaser(Role):
    """You publish the release you are given with the publish tool, then say what you did."""

    needs_approval = frozenset({"publish"})  # a person decides before it runs

    @tool
    async def publish(self, ctx: ToolContext, version: str) -> str:
        """Publish a version (an effect outside the store: it must happen once)."""
        line = f"published {version} ({ctx.idempotency_key})\n"  # key outside effects by it
        await asyncio.to_thread(_append, Path(ctx.task_input["log"]), line)  # "an upload"
        return f"version {version} is live"


def _append(path: Path, line: str) -> None:
    with path.open("a") as f:
        f.write(line)


def offline_model(request: ModelRequest) -> Any:
    """Asks to publish, then reports the tool's answer (or the person's refusal)."""
    last = request.messages[-1]
    if last.role == "tool":
        return reply(f"done: {last.content}")
    return reply("", tool_call("publish", {"version": "1.2.0"}))


def make_pipeline(run_input: Any) -> Pipeline:
    return Pipeline("release", roles=[Releaser()],
                    start=lambda inp: [NewTask("releaser", inp, key="release")],
                    model=FunctionModel(offline_model))


async def main(db: Path, approve: bool) -> int:
    store = await SQLiteBlackboard.open(db)
    try:
        pipeline = make_pipeline({})
        coordinator = Coordinator(store, pipeline)
        name = pipeline.reference() or pipeline.name  # what the run records
        active = [r for r in await store.list_runs(active_only=True) if r.pipeline == name]
        if not active:
            log = db.with_suffix(".published.log").resolve()
            run = await coordinator.run({"log": str(log)})
        elif approve:
            for pending in await store.list_approvals(active[0].id, status="pending"):
                await store.decide_approval(pending.id, approved=True, by=getpass.getuser())
                print(f"approved {pending.tool}({pending.arguments}) from Python")
            run = await coordinator.resume(active[0].id)
        else:
            run = await coordinator.resume(active[0].id)
        print(f"run {run.id}: {run.status}")
        for pending in await store.list_approvals(run.id, status="pending"):
            print(f"waiting for approval {pending.id}: {pending.tool}({pending.arguments})\n"
                  f"  approve: orchestra approve {pending.id} --db {db}  (then: orchestra "
                  f"resume {run.id} --db {db})\n  or: python {sys.argv[0]} --db {db} --approve")
        for task in await store.list_tasks(run.id, status="completed"):
            print("result:", task.result)
        return {"completed": 0, "waiting": 4}.get(run.status, 1)
    finally:
        await store.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", type=Path, default=Path("approval.db"))
    parser.add_argument("--approve", action="store_true",
                        help="approve the pending call from Python, then resume")
    args = parser.parse_args()
    sys.exit(asyncio.run(main(args.db, args.approve)))
