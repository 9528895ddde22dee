"""A pipeline of your own in one short file: a writer drafts release notes, an editor
sends them back until they are good, and every draft is kept on the blackboard.

Runs offline with a FunctionModel standing in for a real model:

    python examples/release_notes.py            # start (or finish) the run
    python examples/release_notes.py --model openai:gpt-4.1-mini   # a real model

Kill it at any moment (Ctrl-C, kill -9) and run it again: it resumes the same run
from each agent's restart point instead of starting over.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from orchestra import (
    Coordinator,
    FunctionModel,
    ModelRequest,
    NewHandoff,
    NewNote,
    NewTask,
    Pipeline,
    Role,
    SlidingWindow,
    SQLiteBlackboard,
    Task,
    ToolContext,
    load_model,
    tool,
)
from orchestra.store import Writes

CHANGES = ["faster resume after a crash", "per-agent compaction", "orchestra board --search"]


class Draft(BaseModel):
    text: str


class Verdict(BaseModel):
    accept: bool
    advice: str = ""


class Writer(Role):
    """You write short, concrete release notes from a list of changes. Reply with JSON:
    {"text": "..."}. If the editor gave advice, follow it."""

    output = Draft
    compaction = SlidingWindow(last=8)

    @tool
    async def changes(self, ctx: ToolContext) -> list[str]:
        """The changes that went into this release."""
        return CHANGES


class Editor(Role):
    """You accept release notes only if they mention every change. Reply with JSON:
    {"accept": true|false, "advice": "..."}."""

    output = Verdict


def after_writer(draft: Draft, task: Task, writes: Writes) -> None:
    writes.handoffs.append(NewHandoff("editor", {"draft": draft.text,
                                                 "round": task.input.get("round", 1)}))


def after_editor(verdict: Verdict, task: Task, writes: Writes) -> None:
    if verdict.accept:
        writes.notes.append(NewNote(task.input["draft"], ("release-notes", "final")))
    elif task.input["round"] < 3:
        writes.handoffs.append(NewHandoff("writer", {"advice": verdict.advice,
                                                     "round": task.input["round"] + 1}))


def offline_model(request: ModelRequest) -> str:
    """Plays both roles: the first draft forgets a change; the editor notices."""
    system, last = request.messages[0].content, request.messages[-1]
    if system.startswith("You accept"):
        draft = json.loads(last.content)["draft"]
        missing = [c for c in CHANGES if c not in draft]
        return json.dumps({"accept": not missing, "advice": f"mention: {missing}"})
    if last.role == "tool":
        items = json.loads(last.content)
        advised = any("advice" in m.content for m in request.messages if m.role == "user")
        return json.dumps({"text": "New: " + "; ".join(items if advised else items[:2])})
    return '{"name": "changes", "arguments": {}}'  # a tool call written as text


def build(run_input: Any) -> Pipeline:
    return Pipeline("release-notes", roles=[Writer(), Editor()],
                    start=lambda inp: [NewTask("writer", {"round": 1}, key="first-draft")],
                    routes={"writer": after_writer, "editor": after_editor},
                    model=FunctionModel(offline_model), ref="examples.release_notes:build")


async def main(db: Path, model_spec: str | None) -> None:
    store = await SQLiteBlackboard.open(db)
    try:
        models = {}
        if model_spec:
            models = {"writer": load_model(model_spec), "editor": load_model(model_spec)}
        coordinator = Coordinator(store, build({}), models=models)
        active = [r for r in await store.list_runs(active_only=True)
                  if r.pipeline.endswith("release_notes:build")]
        run = await (coordinator.resume(active[0].id) if active else coordinator.run({}))
        print(f"run {run.id}: {run.status}")
        for note in await store.search_notes(run.id, tag="final"):
            print("final notes:", note.body)
    finally:
        await store.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", type=Path, default=Path("release-notes.db"))
    parser.add_argument("--model", help="a model spec; default: the offline FunctionModel")
    args = parser.parse_args()
    asyncio.run(main(args.db, args.model))
