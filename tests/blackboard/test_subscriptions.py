"""Roles act on what is posted: each entry triggers each subscribed role once, in the
transaction that posts it; scopes and authors decide who is triggered; joins fire once;
routes compose; the board's ``done`` ends the run."""

from __future__ import annotations

import json
from collections import Counter

import pydantic
import pytest

from examples.research_board import Report, Review, build
from orchestra import (
    PRIVATE,
    PUBLIC,
    Coordinator,
    FunctionModel,
    ModelRequest,
    NewTask,
    On,
    Pipeline,
    Role,
    Scope,
    entry,
)
from orchestra._errors import RoleDefinitionError, UserError
from orchestra.coordinator.subscriptions import entry_triggers, pending, subscribers
from orchestra.store import Blackboard


async def test_the_research_board_runs_each_trigger_once(board_store: Blackboard) -> None:
    run = await Coordinator(board_store, build({})).run({"subject": "tides"})
    assert run.status == "completed", run.error
    entries = await board_store.get_entries(run.id)
    kinds = Counter(e.type for e in entries)
    # three questions; four findings (q2 was rejected once); four reviews; one report
    assert kinds == {"Question": 3, "Finding": 4, "Review": 4, "Thought": 4, "Report": 1}
    consumed = await board_store.get_consumptions(run.id)
    pairs = Counter((c.trigger, c.role) for c in consumed)
    assert max(pairs.values()) == 1
    by_id = {e.id: e for e in entries}
    tasks = {t.id: t for t in await board_store.list_tasks(run.id)}
    for c in consumed:  # every consumption names the task it made, of its role
        assert tasks[c.task_id].role == c.role and tasks[c.task_id].key == \
            f"on:{c.trigger}:{c.role}"
    # each finding was reviewed once; each question, and the rejected review, researched once
    assert sorted(by_id[c.trigger].type for c in consumed if c.role == "critic") == \
        ["Finding"] * 4
    assert Counter(by_id[c.trigger].type for c in consumed if c.role == "researcher") == \
        {"Question": 3, "Review": 1}
    assert [c.trigger for c in consumed if c.role == "writer"] == ["join:answered"]
    [report] = [e for e in entries if e.type == "Report"]
    assert "Revised" in report.value(Report).text
    rejected = [e.value(Review) for e in entries if e.type == "Review"
                and not e.value(Review).accepted]
    assert [r.question_id for r in rejected] == ["q2"]


class Ping(pydantic.BaseModel):
    n: int


class Echo(Role[Ping, Ping]):
    """You echo."""

    consumes = [On(Ping)]
    posts_output = True


class Loud(Role[Ping, Ping]):
    """You shout."""

    consumes = [On(Ping, where=lambda p: p.n > 1, own=True)]
    labels = frozenset({"team"})


def _pipeline() -> Pipeline:
    return Pipeline("pings", roles=[Echo(), Loud()], start=lambda inp: [NewTask("echo", inp)],
                    model=FunctionModel(lambda r: '{"n": 1}'), ref="x:y")


def test_matching_decides_author_scope_and_condition() -> None:
    pipeline = _pipeline()
    subs = subscribers(pipeline)

    def roles(author: str, n: int, scope: Scope = PUBLIC) -> list[str]:
        e = pending(entry(Ping(n=n), scope=scope), "r", f"r/{author}", None)
        return [t.role for t in entry_triggers(pipeline, subs, e)]

    assert roles("operator", 2) == ["echo", "loud"]
    assert roles("echo", 2) == ["loud"]  # echo is not triggered by its own entries
    assert roles("loud", 2) == ["echo", "loud"]  # loud asked for its own (own=True)
    assert roles("operator", 1) == ["echo"]  # loud's condition
    assert roles("operator", 2, PRIVATE) == []  # private to its author, an operator
    assert roles("operator", 2, Scope.roles("loud")) == ["loud"]
    assert roles("operator", 2, Scope.labels("team")) == ["loud"]
    assert roles("echo", 2, PRIVATE) == []


async def test_an_entry_posted_from_python_is_caught_up_once(board_store: Blackboard) -> None:
    seen: list[str] = []

    def model(request: ModelRequest) -> str:
        seen.append(request.messages[-1].content)
        return '{"n": 7}'

    pipeline = Pipeline("pings", roles=[Echo(), Loud()],
                        start=lambda inp: [NewTask("echo", inp)], model=FunctionModel(model),
                        ref="x:y")
    coordinator = Coordinator(board_store, pipeline)
    run = await coordinator.run({"n": 0})
    assert run.status == "completed"
    # echo's output (n=7) triggered loud (n > 1), not echo itself
    assert Counter(t.role for t in await board_store.list_tasks(run.id)) == {"echo": 1,
                                                                              "loud": 1}
    await board_store.post_entry(run.id, "operator", Ping(n=5))
    await board_store.set_run_status(run.id, "running")
    run = await coordinator.resume(run.id)
    assert run.status == "completed"
    assert Counter(t.role for t in await board_store.list_tasks(run.id)) == {"echo": 2,
                                                                              "loud": 3}
    await board_store.set_run_status(run.id, "running")
    run = await coordinator.resume(run.id)  # nothing left to trigger: nothing new
    assert len(await board_store.list_tasks(run.id)) == 5


class Counter_(Role[Ping, Ping]):
    """You count on."""

    name = "counter"
    consumes = [On(Ping, own=True)]
    posts_output = True


async def test_done_on_the_board_completes_a_run_that_would_go_on(
        board_store: Blackboard) -> None:
    """A role that consumes its own entries would count for ever; the board says when
    five are posted, and the run completes."""
    def model(request: ModelRequest) -> str:
        return json.dumps({"n": json.loads(request.messages[-1].content)["n"] + 1})

    pipeline = Pipeline("count", roles=[Counter_()], start=lambda inp: [NewTask("counter", inp)],
                        model=FunctionModel(model), ref="x:y",
                        done=lambda board: len(board.of(Ping)) >= 5)
    run = await Coordinator(board_store, pipeline).run({"n": 0})
    assert run.status == "completed"
    values = [e.value(Ping).n for e in await board_store.get_entries(run.id)]
    assert values[:5] == [1, 2, 3, 4, 5] and len(values) <= 6


def test_what_a_role_consumes_is_checked_when_the_class_is_defined() -> None:
    with pytest.raises(RoleDefinitionError, match=r"consumes: .* is not On"):
        type("Bad", (Role,), {"__doc__": "You.", "consumes": [Ping]})
    with pytest.raises(RoleDefinitionError, match="labels"):
        type("Bad", (Role,), {"__doc__": "You.", "labels": "audit"})
    with pytest.raises(UserError, match="pydantic model class"):
        On(str)  # type: ignore[arg-type]


async def test_a_person_posts_through_the_coordinator_with_its_triggers(
        board_store: Blackboard) -> None:
    pipeline = Pipeline("pings", roles=[Echo(), Loud()], start=lambda inp: [NewTask("echo", inp)],
                        model=FunctionModel(lambda r: '{"n": 1}'), ref="x:y")
    coordinator = Coordinator(board_store, pipeline)
    run = await board_store.create_run("pings", {})
    posted = await coordinator.post_entry(run.id, entry(Ping(n=3), scope=Scope.roles("loud")))
    [task] = await board_store.list_tasks(run.id)  # before any drive: in the same commit
    assert (task.role, task.input, task.created_at) == ("loud", {"n": 3}, posted.created_at)
    assert [c.trigger for c in await board_store.get_consumptions(run.id)] == [posted.id]
