"""Scopes, attacked the way Terrarium (arXiv 2510.14312) attacks a board: a private entry
or note carrying a unique marker never reaches another role: not its trigger, not a model
request, not a tool result (the board read, the notes listed and searched, another
agent's history searched, recall), not the board as that role sees it. A role named by a
scope, or carrying its label, does see it. On both stores."""

from __future__ import annotations

import json
import os

import pydantic

from orchestra import (
    PRIVATE,
    Coordinator,
    FunctionModel,
    ModelRequest,
    NewTask,
    On,
    Pipeline,
    Role,
    Scope,
    ToolContext,
    reply,
    tool,
    tool_call,
)
from orchestra.store import Blackboard, NewNote
from orchestra.store.views import ReadOnlyBoard

MARKER = "MARKER-" + os.urandom(8).hex()
PUBLIC_NOTE = "the keeper keeps a code"


class Start(pydantic.BaseModel):
    go: bool = True


class Secret(pydantic.BaseModel):
    text: str


class Open(pydantic.BaseModel):
    text: str


class Keeper(Role[Start, Open]):
    """You keep secrets."""

    posts_output = True

    @tool
    async def keep(self, ctx: ToolContext, text: str) -> str:
        """Keep a secret, and share one with the auditors."""
        ctx.post_note(PUBLIC_NOTE, "code")
        ctx.post(Secret(text=text), scope=PRIVATE)
        ctx.post_note(f"note: {text}", "code", scope=PRIVATE)
        ctx.post(Secret(text=text + " for auditors"), scope=Scope.labels("audit"))
        ctx.post_note(f"note: {text} for auditors", "code", scope=Scope.labels("audit"))
        return "kept"


class Snoop(Role[Open, Open]):
    """You snoop."""

    consumes = [On(Secret), On(Open)]

    @tool
    async def look(self, ctx: ToolContext) -> str:
        """Everything on the board, and the keeper's history."""
        board = [e.body for e in await ctx.board.get_entries(ctx.run_id)]
        notes = [n.body for n in await ctx.board.search_notes(ctx.run_id, limit=1)]
        found = [n.body for n in await ctx.board.search_notes(ctx.run_id, text="code")]
        tagged = [n.body for n in await ctx.board.search_notes(ctx.run_id, tag="code")]
        stolen = await ctx.board.search_messages(f"{ctx.run_id}/keeper", "code")
        return json.dumps({"board": board, "notes": notes, "found": found, "tagged": tagged,
                           "stolen": [m.content for m in stolen]})


class Auditor(Role[Secret, Open]):
    """You audit."""

    consumes = [On(Secret)]
    labels = frozenset({"audit"})


def play(request: ModelRequest) -> object:
    system, last = request.messages[0].content, request.messages[-1]
    if system.startswith("You keep"):
        if last.role == "tool":
            return '{"text": "nothing to see"}'
        return reply(f"I will keep the code {MARKER}",
                     tool_call("keep", {"text": f"the code is {MARKER}"}))
    if system.startswith("You snoop"):
        if last.role == "tool" and last.name == "look":
            return reply("", tool_call("recall", {"query": "code"}))
        if last.role == "tool":
            return '{"text": "found nothing"}'
        return reply("", tool_call("look", {}))
    return '{"text": "audited"}'


async def test_a_private_entry_never_reaches_another_role(board_store: Blackboard) -> None:
    model = FunctionModel(play)  # type: ignore[arg-type]
    pipeline = Pipeline("terrarium", roles=[Keeper(), Snoop(), Auditor()],
                        start=lambda inp: [NewTask("keeper", inp)], model=model, ref="x:y")
    run = await Coordinator(board_store, pipeline).run({"go": True})
    assert run.status == "completed", run.error
    entries = await board_store.get_entries(run.id)
    assert [(e.type, str(e.scope)) for e in entries] == [
        ("Secret", "private"), ("Secret", "labels:audit"), ("Open", "public")]
    tasks = await board_store.list_tasks(run.id)
    # the snoop was triggered by the public entry only; the auditor by the labelled one
    assert sorted(t.role for t in tasks) == ["auditor", "keeper", "snoop"]
    [audit] = [t for t in tasks if t.role == "auditor"]
    assert audit.input == {"text": f"the code is {MARKER} for auditors"}
    # a tool's entry triggers in the transaction of the tool's journal entry: same clock
    assert audit.created_at == entries[1].created_at and audit.parent_id == entries[1].task_id

    def text(request: ModelRequest) -> str:
        return json.dumps([[m.content, [c.arguments for c in m.tool_calls]]
                           for m in request.messages])

    snooped = [r for r in model.calls if r.messages[0].content.startswith("You snoop")]
    assert len(snooped) == 3  # look, recall, answer: it did attack
    for request in snooped:  # its prompt, its task, and every tool result it got
        assert MARKER not in text(request)
    tool_results = [m.content for m in snooped[-1].messages if m.role == "tool"]
    assert len(tool_results) == 2 and all(MARKER not in r for r in tool_results)
    looked = json.loads(tool_results[0])
    assert looked["board"] == [{"text": "nothing to see"}]
    # the notes it listed (the newest, the public one past two it may not read), searched
    # and read by tag: the public one only, though the private ones hold the words
    assert looked["notes"] == looked["found"] == looked["tagged"] == [PUBLIC_NOTE]
    notes = await board_store.search_notes(run.id)
    assert sorted(str(n.scope) for n in notes) == ["labels:audit", "private", "public"]
    # a note posted from Python, for the auditor alone
    await board_store.post_note(run.id, "operator", NewNote(f"audit {MARKER}", ("code",),
                                                            scope=Scope.roles("auditor")))
    # the board as each role sees it: entries, notes listed, notes searched
    for role, labels, seen, read in (("snoop", frozenset(), 1, 1),
                                     ("auditor", frozenset({"audit"}), 2, 3),
                                     ("keeper", frozenset(), 3, 3)):
        board = ReadOnlyBoard(board_store, role, labels)
        assert len(await board.get_entries(run.id)) == seen, role
        listed = await board.search_notes(run.id)
        searched = await board.search_notes(run.id, text="code")
        assert len(listed) == read and {n.id for n in listed} == {n.id for n in searched}
        assert (role == "snoop") == all(MARKER not in n.body for n in listed)
    assert all(MARKER in r for r in [text(c) for c in model.calls
                                      if c.messages[0].content.startswith("You keep")][-1:])
