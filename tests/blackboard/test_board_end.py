"""The board ends a run: ``done``; a stall (the same entry again and again, or task ends
that post nothing) ends it ``stalled`` with the reason, or waits for a person, who posts
an entry and resumes it."""

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
    Stall,
)
from orchestra.coordinator.board_end import decide_end
from orchestra.store import Blackboard


class Ping(pydantic.BaseModel):
    n: int


class Looper(Role[Ping, Ping]):
    """You answer a ping."""

    consumes = [On(Ping, own=True)]
    posts_output = True


class Quiet(Role[Ping, str]):
    """You say nothing on the board."""

    concurrency = 1  # one after another: the third quiet end stalls the run


def _stuck(request: ModelRequest) -> str:
    return '{"n": 1}'  # the same entry, again and again


def _counting(request: ModelRequest) -> str:
    return json.dumps({"n": json.loads(request.messages[-1].content)["n"] + 1})


async def test_the_same_entry_again_and_again_stalls_the_run(board_store: Blackboard) -> None:
    pipeline = Pipeline("loop", roles=[Looper()], start=lambda inp: [NewTask("looper", inp)],
                        model=FunctionModel(_stuck), ref="x:y", stall=Stall(repeats=3))
    run = await Coordinator(board_store, pipeline).run({"n": 0})
    assert run.status == "stalled"
    assert run.error is not None and "the same Ping entry was posted 3 times" in run.error
    # the third commits with the end that posts it, and triggers nothing more
    assert [e.body for e in await board_store.get_entries(run.id)] == [{"n": 1}] * 3
    assert len(await board_store.list_tasks(run.id)) == 3
    [note] = await board_store.search_notes(run.id, tag="stalled")
    assert note.body == run.error and note.author == "orchestra"


async def test_task_ends_that_post_nothing_stall_the_run(board_store: Blackboard) -> None:
    pipeline = Pipeline("quiet", roles=[Quiet()],
                        start=lambda inp: [NewTask("quiet", {"n": i}) for i in range(6)],
                        model=FunctionModel(lambda r: "ok"), ref="x:y",
                        stall=Stall(after=3, repeats=None))
    run = await Coordinator(board_store, pipeline).run({})
    assert run.status == "stalled"
    assert run.error is not None and "task ends posted no new entry" in run.error
    assert len(await board_store.list_tasks(run.id, status="completed")) == 3


async def test_a_stall_may_wait_for_a_person_who_posts_and_resumes(
        board_store: Blackboard) -> None:
    told: list[bool] = []

    def model(request: ModelRequest) -> str:  # stuck at 3 until a person has said something
        n = json.loads(request.messages[-1].content)["n"]
        return json.dumps({"n": n + 1 if told or n != 3 else n})

    pipeline = Pipeline("loop", roles=[Looper()], start=lambda inp: [NewTask("looper", inp)],
                        model=FunctionModel(model), ref="x:y",
                        stall=Stall(repeats=2, wait=True),
                        done=lambda board: any(p.n >= 21 for p in board.of(Ping)))
    coordinator = Coordinator(board_store, pipeline)
    run = await coordinator.run({"n": 3})
    assert run.status == "waiting" and run.error is not None and "stalled" in run.error
    await board_store.post_entry(run.id, "operator", Ping(n=20))  # a person says something
    told.append(True)
    run = await coordinator.resume(run.id)
    assert run.status == "completed", run.error
    # the entry the stall held back was consumed on resume (3 -> 4 -> ...), and the
    # person's (20 -> 21, which ends the run long before the other count gets there)
    values = [e.value(Ping).n for e in await board_store.get_entries(run.id)]
    assert values[:3] == [3, 3, 20] and values.count(3) == 2 and 21 in values
    consumed = {c.trigger for c in await board_store.get_consumptions(run.id)}
    assert all(e.id in consumed for e in (await board_store.get_entries(run.id))[:3])


def test_decide_end_is_a_function_of_the_board() -> None:
    pipeline = Pipeline("p", roles=[Looper()], start=lambda inp: [], ref="x:y",
                        stall=Stall(after=2, repeats=None))
    assert decide_end(pipeline, [], 1) is None
    end = decide_end(pipeline, [], 2)
    assert end is not None and end.status == "stalled"
    assert _counting is not None
