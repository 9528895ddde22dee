"""A control chooses who acts when an entry triggers several roles: all of them, by
priority (the rest when the run idles), or a controller role whose choice is its
journaled answer."""

from __future__ import annotations

import json

import pydantic

from orchestra import (
    Coordinator,
    FunctionModel,
    ModelRequest,
    NewTask,
    On,
    Pipeline,
    Role,
)
from orchestra.control import Choice, Controller, Options, Priority
from orchestra.store import Blackboard


class Ping(pydantic.BaseModel):
    n: int


class Pong(pydantic.BaseModel):
    by: str


class Source(Role[Ping, Ping]):
    """You ping."""

    posts_output = True


class Fast(Role[Ping, Pong]):
    """You are fast."""

    consumes = [On(Ping)]


class Slow(Role[Ping, Pong]):
    """You are slow."""

    consumes = [On(Ping)]


class Chair(Role[Options, Choice]):
    """You choose who acts."""


def play(request: ModelRequest) -> str:
    system = request.messages[0].content
    if system.startswith("You ping"):
        return '{"n": 1}'
    if system.startswith("You choose"):
        options = json.loads(request.messages[-1].content)["options"]
        return json.dumps({"chosen": [i for i, o in enumerate(options) if o["role"] == "slow"]})
    return json.dumps({"by": system.split()[2].strip(".")})


def _pipeline(**control: object) -> Pipeline:
    return Pipeline("control", roles=[Source(), Fast(), Slow(), Chair()],
                    start=lambda inp: [NewTask("source", inp)], model=FunctionModel(play),
                    ref="x:y", **control)  # type: ignore[arg-type]


async def test_all_triggered_roles_act_by_default(board_store: Blackboard) -> None:
    run = await Coordinator(board_store, _pipeline()).run({"n": 0})
    assert run.status == "completed"
    assert sorted(t.role for t in await board_store.list_tasks(run.id)) == ["fast", "slow",
                                                                             "source"]


async def test_priority_acts_first_and_the_rest_when_the_run_idles(
        board_store: Blackboard) -> None:
    run = await Coordinator(board_store, _pipeline(control=Priority([Slow]))).run({"n": 0})
    assert run.status == "completed"
    tasks = await board_store.list_tasks(run.id)
    assert [t.role for t in sorted(tasks, key=lambda t: t.created_at)] == ["source", "slow",
                                                                           "fast"]
    [slow] = [t for t in tasks if t.role == "slow"]
    [fast] = [t for t in tasks if t.role == "fast"]
    assert slow.parent_id is not None and fast.parent_id is None  # fast: caught up at idle
    assert len(await board_store.get_consumptions(run.id)) == 2


async def test_a_controller_role_chooses_and_its_choice_is_journaled(
        board_store: Blackboard) -> None:
    run = await Coordinator(board_store, _pipeline(control=Controller(Chair))).run({"n": 0})
    assert run.status == "completed", run.error
    tasks = await board_store.list_tasks(run.id)
    roles = sorted(t.role for t in tasks)
    # asked twice: both options (it chose slow), then fast's alone (it chose nothing)
    assert roles == ["chair", "chair", "slow", "source"]
    [consumed] = await board_store.get_consumptions(run.id)
    assert consumed.role == "slow"
    first = min((t for t in tasks if t.role == "chair"), key=lambda t: t.created_at)
    assert [o["role"] for o in first.input["options"]] == ["fast", "slow"]
    steps = await board_store.get_steps(first.id, 0)
    assert [s.kind for s in steps] == ["model"] and "chosen" in json.dumps(steps[0].output)
