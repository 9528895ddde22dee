"""A child process for test_board_kills: drives (or resumes) one run of a small board
pipeline and, when told, SIGKILLs itself at one instant of it.

Usage: python _board_kill_child.py DB SCENARIO POINT CALLS

``SCENARIO`` is ``stall`` (a looper posting the same entry until ``Stall(repeats=3)``
ends the run) or ``control`` (a source's entry triggers two roles; a controller chooses
one). ``POINT`` is where this process dies (``none``: it finishes): ``decided``, as the
board's end is decided (before the stall's status and note commit); ``committed``, right
after they commit; ``model``, in the middle of the controller's model call; ``choice``,
after the controller's model call committed, before its chosen task is posted (in its
output check, the journaled step after it). Every model call is appended to ``CALLS``
(one role a line), so the test counts the calls of every process.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import Collection
from pathlib import Path
from typing import Any

import pydantic

from orchestra import Coordinator, FunctionModel, ModelRequest, NewTask, On, Pipeline, Role, Stall
from orchestra._types import Run, RunStatus
from orchestra.control import Choice, Controller, Options
from orchestra.store import NewNote, SQLiteBlackboard
from orchestra.subscriptions import BoardView
from orchestra.tools import ToolContext


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


class Ping(pydantic.BaseModel):
    n: int


class Pong(pydantic.BaseModel):
    by: str


class Looper(Role[Ping, Ping]):
    """You answer a ping."""

    consumes = [On(Ping, own=True)]
    posts_output = True


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

    def __init__(self, point: str = "none") -> None:
        self.point = point

    async def check_output(self, ctx: ToolContext, output: Any) -> Any:
        if self.point == "choice":  # its model step committed; its task's end has not
            die()
        return None


class Dying(SQLiteBlackboard):
    """The store, dying right after a run's status and its note commit (``committed``)."""

    point = "none"

    async def set_run_status_noting(self, run_id: str, status: RunStatus, note: NewNote, *,
                                    author: str, error: str | None = None,
                                    only_from: Collection[RunStatus] | None = None) -> Run:
        run = await super().set_run_status_noting(run_id, status, note, author=author,
                                                  error=error, only_from=only_from)
        if self.point == "committed":
            die()
        return run


def _answer(point: str, calls: Path) -> FunctionModel:
    def answer(request: ModelRequest) -> str:
        system = request.messages[0].content
        with calls.open("a") as f:
            f.write(system.split(".")[0] + "\n")  # "You choose who acts", ...
        if system.startswith("You answer"):
            return '{"n": 1}'  # the same entry, again and again
        if system.startswith("You ping"):
            return '{"n": 1}'
        if system.startswith("You choose"):
            if point == "model":
                die()
            options = json.loads(request.messages[-1].content)["options"]
            return json.dumps({"chosen": [i for i, o in enumerate(options)
                                          if o["role"] == "slow"]})
        return json.dumps({"by": system.split()[2].strip(".")})

    return FunctionModel(answer)


def _pipeline(scenario: str, point: str, calls: Path) -> Pipeline:
    model = _answer(point, calls)
    if scenario == "stall":
        def done(board: BoardView) -> bool:
            if point == "decided" and len(board.of(Ping)) >= 3:
                die()  # the third Ping: the stall is being decided, nothing of it written
            return False

        return Pipeline("loop", roles=[Looper()], start=lambda inp: [NewTask("looper", inp)],
                        model=model, ref="x:y", stall=Stall(repeats=3), done=done)
    return Pipeline("control", roles=[Source(), Fast(), Slow(), Chair(point)],
                    start=lambda inp: [NewTask("source", inp)], model=model, ref="x:y",
                    control=Controller(Chair))


async def main(db: str, scenario: str, point: str, calls: str) -> None:
    Dying.point = point
    store = await Dying.open(db)
    try:
        coordinator = Coordinator(store, _pipeline(scenario, point, Path(calls)))
        runs = await store.list_runs()
        run = await (coordinator.resume(runs[0].id) if runs else coordinator.run({"n": 0}))
        print(run.status, flush=True)
    finally:
        await store.close()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
