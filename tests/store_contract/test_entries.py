"""Typed entries: posted with a step or a task's end (same transaction), from Python, read
back in order; triggers make one task per (entry, role) and a consumption, at most once."""

from __future__ import annotations

import pydantic
import pytest
from backends import Claimed

from orchestra._entries import PRIVATE, Scope
from orchestra._errors import NotFoundError, UserError
from orchestra.store import Blackboard, NewHandoff, StepResult, Writes
from orchestra.store.entry_protocol import NewEntry, NewTrigger


class Question(pydantic.BaseModel):
    text: str


async def test_an_entry_commits_with_its_task_end_and_reads_back_typed(
        store: Blackboard, claimed: Claimed) -> None:
    run, task, lease = await claimed("planner")
    agent = f"{run.id}/planner"
    entry = NewEntry.of(Question(text="why?"), tags=["q"], scope=Scope.roles("researcher"))
    await store.complete_task(task.id, lease, {"ok": 1}, agent_id=agent,
                              writes=Writes(entries=[entry]),
                              step=StepResult(task.id, 0, 1, "model", "m", "d", {"text": "x"}))
    [got] = await store.get_entries(run.id)
    assert (got.id, got.type, got.author, got.tags, got.scope, got.task_id) == (
        entry.id, "Question", agent, ("q",), Scope.roles("researcher"), task.id)
    assert got.value(Question) == Question(text="why?") and got.author_role == "planner"
    kinds = [e.kind for e in await store.events(run.id)]
    assert "entry.posted" in kinds and kinds[-1] == "task.completed"


async def test_entries_from_python_keep_their_order_and_filter_by_type(
        store: Blackboard) -> None:
    run = await store.create_run("p", {})
    first = await store.post_entry(run.id, "operator", Question(text="a"))
    await store.post_entry(run.id, "operator", NewEntry("Note", {"n": 1}, scope=PRIVATE))
    third = await store.post_entry(run.id, "operator", Question(text="c"))
    assert [e.type for e in await store.get_entries(run.id)] == ["Question", "Note", "Question"]
    questions = await store.get_entries(run.id, type="Question")
    assert [e.body for e in questions] == [{"text": "a"}, {"text": "c"}]
    assert [e.id for e in await store.get_entries(run.id, after=first.position)][-1] == third.id
    with pytest.raises(NotFoundError):
        await store.get_entries("nope")
    with pytest.raises(UserError, match="pydantic model"):
        await store.post_entry(run.id, "operator", {"not": "a model"})  # type: ignore[arg-type]


async def test_a_failed_bundle_takes_its_entries_with_it(
        store: Blackboard, claimed: Claimed) -> None:
    run, task, lease = await claimed("planner")
    with pytest.raises(UserError):
        await store.complete_task(task.id, lease, {}, agent_id=f"{run.id}/planner",
                                  writes=Writes(entries=[NewEntry("Q", {"t": 1})],
                                                handoffs=[NewHandoff("coder", {1j})]))
    assert await store.get_entries(run.id) == []


async def test_a_trigger_makes_one_task_and_one_consumption_however_often_it_commits(
        store: Blackboard, claimed: Claimed) -> None:
    run, task, lease = await claimed("planner")
    entry = NewEntry("Question", {"text": "a"})
    trigger = NewTrigger(entry.id, "researcher", {"question": "a"})
    await store.complete_task(task.id, lease, {}, agent_id=f"{run.id}/planner",
                              writes=Writes(entries=[entry], triggers=[trigger]))
    [made] = await store.list_tasks(run.id, role="researcher")
    assert (made.input, made.parent_id, made.cause) == (
        {"question": "a"}, task.id, f"entry:{entry.id}")
    assert await store.post_triggers(run.id, [trigger]) == []  # already consumed
    [consumed] = await store.get_consumptions(run.id)
    assert (consumed.trigger, consumed.role, consumed.task_id) == (entry.id, "researcher",
                                                                   made.id)
    joined = NewTrigger("join:all-answered", "writer", {})
    assert [c.role for c in await store.post_triggers(run.id, [joined, joined])] == ["writer"]
    assert len(await store.list_tasks(run.id, role="writer")) == 1


async def test_a_fork_keeps_the_entries_and_consumptions_up_to_its_point(
        store: Blackboard) -> None:
    run = await store.create_run("p", {})
    first = NewEntry("Question", {"text": "a"})
    await store.post_entry(run.id, f"{run.id}/planner", first,
                           triggers=[NewTrigger(first.id, "researcher", {"q": "a"})])
    point = (await store.events(run.id))[-1].seq
    await store.post_entry(run.id, "operator", NewEntry("Question", {"text": "b"}))
    fork = await store.fork_run(run.id, point)
    [copied] = await store.get_entries(fork.id)
    assert (copied.id, copied.author, copied.body) == (first.id, f"{fork.id}/planner",
                                                       {"text": "a"})
    [consumed] = await store.get_consumptions(fork.id)
    [task] = await store.list_tasks(fork.id, role="researcher")
    assert (consumed.trigger, consumed.task_id) == (first.id, task.id)
    assert task.key == f"on:{first.id}:researcher"
    assert len(await store.get_entries(run.id)) == 2  # the source is only read
