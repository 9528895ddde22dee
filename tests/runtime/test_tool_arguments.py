"""Tool-call arguments: capped like model replies, and stored once (in the message)."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

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
from orchestra.runtime.task_runner import MAX_REPLY_CHARS


class Writer(Role):
    """You save text with the save tool, then answer with one word."""

    output = str
    max_turns = 4

    def __init__(self) -> None:
        self.saved: list[int] = []

    @tool
    async def save(self, ctx: ToolContext, text: str) -> str:
        """Save some text."""
        self.saved.append(len(text))
        return "saved"


async def _run(tmp_path: Path, model: ScriptedModel, role: Writer) -> tuple[SQLiteBlackboard, str]:
    store = await SQLiteBlackboard.open(tmp_path / "o.db", max_payload_bytes=4 << 20)
    pipeline = Pipeline("w", roles=[role], model=model,
                        start=lambda inp: [NewTask("writer", inp, max_attempts=1)])
    run = await Coordinator(store, pipeline).run("save it")
    return store, run.id


async def _count(store: SQLiteBlackboard, table: str, column: str, marker: str) -> int:
    """Rows of ``table`` whose ``column`` holds ``marker``, read from the file itself."""
    with contextlib.closing(sqlite3.connect(store.path)) as conn:
        found = conn.execute(f"SELECT count(*) FROM {table} WHERE instr({column}, ?) > 0",
                             (marker,))
        return int(found.fetchone()[0])


async def test_arguments_are_stored_once_and_replay_whole(tmp_path: Path) -> None:
    marker = "UNIQUE-ARGUMENT-MARKER"
    text = marker + "x" * 150_000
    role = Writer()
    model = ScriptedModel([reply("", tool_call("save", {"text": text})), reply("done")])
    store, run_id = await _run(tmp_path, model, role)
    assert (await store.get_run(run_id)).status == "completed"
    assert role.saved == [len(text)]
    assert await _count(store, "messages", "tool_calls", marker) == 1
    assert await _count(store, "steps", "output", marker) == 0  # a pointer, not a copy
    (task,) = await store.list_tasks(run_id)
    model_step = (await store.get_steps(task.id, 0))[0]
    [[_, name, arguments]] = model_step.output["calls"]  # read back through the pointer
    assert name == "save" and marker in arguments and len(arguments) > len(text)
    await store.close()


async def test_arguments_over_the_cap_are_not_run_nor_stored(tmp_path: Path) -> None:
    huge = "y" * (MAX_REPLY_CHARS + 1000)
    role = Writer()
    model = ScriptedModel([reply("", tool_call("save", {"text": huge})),
                           reply("", tool_call("save", {"text": "short"})), reply("done")])
    store, run_id = await _run(tmp_path, model, role)
    assert (await store.get_run(run_id)).status == "completed"
    assert role.saved == [5]  # the oversized call never ran
    feedback = model.calls[1].messages[-1].content
    assert "arguments were far too long: save (" in feedback and "not run" in feedback
    for table, column in (("messages", "tool_calls"), ("steps", "output")):
        assert await _count(store, table, column, "y" * 1000) == 0
    await store.close()
