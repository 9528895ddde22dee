"""A cancel that lands in the same moment as a tool's return is not lost.

Python 3.11's ``asyncio.wait_for`` returns the result when its work ends as the cancel
arrives, and the cancel is gone: Ctrl-C landed as a tool returned and the run went on
to its end (seen in CI, about one time in ten under load). The runtime now bounds
tools and tasks with ``asyncio.timeout``, which keeps the cancel."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from orchestra import (
    Coordinator,
    NewTask,
    Pipeline,
    Role,
    ScriptedModel,
    SQLiteBlackboard,
    ToolContext,
    reply,
    tool,
    tool_call,
)


class Stopper(Role):
    """You call halt once, then answer with one word."""

    name = "stopper"
    output = str
    max_turns = 4

    def __init__(self) -> None:
        self.drive: asyncio.Task[object] | None = None
        self.halts = 0

    @tool
    async def halt(self, ctx: ToolContext) -> str:
        """Stop the run, as Ctrl-C would, just as this call returns."""
        self.halts += 1
        assert self.drive is not None
        self.drive.cancel()  # the CLI's Ctrl-C: the drive is cancelled ...
        for job in asyncio.all_tasks():  # ... and it cancels the task's job
            if job.get_name().endswith(":stopper"):
                job.cancel()
        return "halted"  # returned in the same step: no await between cancel and return


class BoundedStopper(Stopper):
    """You call halt once, then answer with one word."""

    name = "stopper"
    task_timeout = 60.0  # a task with a time limit is run under another timeout


@pytest.mark.parametrize("kind", [Stopper, BoundedStopper])
async def test_a_cancel_landing_as_a_tool_returns_stops_the_task(
        tmp_path: Path, kind: type[Stopper]) -> None:
    role = kind()
    model = ScriptedModel([reply("", tool_call("halt", {})), reply("done")])
    store = await SQLiteBlackboard.open(tmp_path / "o.db")
    try:
        pipeline = Pipeline("s", roles=[role], model=model,
                            start=lambda inp: [NewTask("stopper", inp)])
        coord = Coordinator(store, pipeline)
        run = await coord.start("go")
        role.drive = asyncio.create_task(coord.drive(run.id))
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(asyncio.shield(role.drive), 30)
        assert role.halts == 1
        assert model.remaining == 1, "the model was asked again after the cancel"
    finally:
        await store.close()
