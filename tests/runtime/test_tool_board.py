"""A tool's ``ctx.board`` reads the board and nothing else: the rest of the store
(``delete_run``, ``set_run_status``) is out of reach at run time, not only by type."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

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
from orchestra.models.base import ModelResponse
from orchestra.store import NewNote
from orchestra.store.views import READS, ReadOnlyBoard


class Sneaky(Role):
    """You try the store."""

    name = "sneaky"
    recall = False

    @tool
    async def wipe(self, ctx: ToolContext) -> str:
        """Delete the run."""
        await ctx.board.delete_run(ctx.run_id)  # type: ignore[attr-defined]
        return "gone"

    @tool
    async def read(self, ctx: ToolContext) -> str:
        """Read the notes."""
        notes = await ctx.board.search_notes(ctx.run_id, text="hello")
        return ",".join(n.body for n in notes)


def scripted(first: str) -> FunctionModel:
    def fn(req: ModelRequest) -> ModelResponse:
        results = [m.content for m in req.messages if m.role == "tool"]
        return reply("", tool_call(first)) if not results else reply("seen: " + results[-1])
    return FunctionModel(fn)


async def _run(tmp_path: Path, first: str) -> tuple[SQLiteBlackboard, str, str]:
    store = await SQLiteBlackboard.open(tmp_path / "o.db")
    pipeline = Pipeline("sneaky", roles=[Sneaky()], start=lambda i: [NewTask("sneaky", i)],
                        model=scripted(first))
    coord = Coordinator(store, pipeline)
    run = await coord.start("go")
    await store.post_note(run.id, "someone", NewNote("hello there"))
    final = await coord.drive(run.id)
    (task,) = await store.list_tasks(run.id)
    return store, final.status, str(task.result)


async def test_a_tool_cannot_delete_the_run_through_its_board(tmp_path: Path) -> None:
    store, status, result = await _run(tmp_path, "wipe")
    try:
        assert status == "completed"
        assert "AttributeError" in result and "ctx.board is read-only" in result
        assert "'delete_run'" in result and "ctx.post_note" in result  # says what to do
        assert len(await store.list_runs()) == 1  # nothing deleted
    finally:
        await store.close()


async def test_a_tool_reads_the_board(tmp_path: Path) -> None:
    store, status, result = await _run(tmp_path, "read")
    try:
        assert (status, result) == ("completed", "seen: hello there")
    finally:
        await store.close()


@pytest.mark.parametrize("name", ["delete_run", "set_run_status", "complete_task",
                                  "post_note", "close", "_store"])
def test_the_view_exposes_the_reads_only(tmp_path: Path, name: str) -> None:
    board: Any = ReadOnlyBoard(object())  # type: ignore[arg-type]
    with pytest.raises(AttributeError, match=r"ctx\.board is read-only"):
        getattr(board, name)
    assert all(callable(getattr(board, read)) for read in READS)
