"""The pipeline of the versions trial, in three deploys of its code (``TRIAL_CODE``):

* ``v1``: a writer that calls its ``work`` tool twice (the second call slow), then a
  critic (``route``);
* ``v2``: the writer's instructions reworded: a run killed in the writer cannot move;
* ``v3``: only the critic's instructions changed: a run killed in the writer moves;
* ``v4``: v2's rewording behind ``patched("friendly")``: a run killed in the writer moves
  with ``upgrade --patched`` and its writer keeps the old instructions; new runs get the
  new ones;
* ``t1``: v1 with its route as a function (``to_critic``);
* ``t2``: t1 with a change behind ``patched("careful")`` in the ``work`` tool
  (``ctx.patched``) and in the route (a ``patched`` parameter): a task begun under t1
  keeps the old tool and route, a task begun under t2 gets the new ones.

Every model call and tool call appends a line to the run input's ``effects`` file, so a
test sees what ran, and how often, in any process.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from orchestra import FunctionModel, NewTask, Pipeline, Role, Task, handoff, reply, tool_call
from orchestra.models.base import ModelRequest, ModelResponse
from orchestra.roles import Patched
from orchestra.store.protocol import Writes
from orchestra.tools import ToolContext, tool

REF = "tests.versions.trial_pipeline:build"


def _effect(run_input: dict[str, Any], line: str) -> None:
    with open(run_input["effects"], "a", encoding="utf-8") as f:
        f.write(line + "\n")


async def _held(path: str | None) -> None:
    """Wait while the file at ``path`` exists (a test holds a step in flight with it)."""
    for _ in range(2400):
        if path is None or not Path(path).is_file():
            return
        await asyncio.sleep(0.05)


def make(code: str, run_input: dict[str, Any]) -> Pipeline:
    """The pipeline as deploy ``code`` has it."""

    class Writer(Role):
        name = "writer"
        instructions = ("Write a short, friendly greeting." if code == "v2"
                        else "Write a short greeting.")
        output = str
        recall = False
        patches = frozenset({"friendly"} if code == "v4" else {"careful"} if code == "t2"
                            else ())

        def instructions_for(self, patched: Patched) -> str:
            if code == "v4" and patched("friendly"):
                return "Write a short, friendly greeting."
            return type(self).instructions

        @tool
        async def work(self, ctx: ToolContext, n: int) -> str:
            """Do part ``n`` of the work."""
            _effect(run_input, f"work {n} start")
            if n == 2:
                await _held(run_input.get("hold_work"))
            careful = " carefully" if code == "t2" and ctx.patched("careful") else ""
            _effect(run_input, f"work {n} done{careful}")
            return f"part {n} done"

    class Critic(Role):
        name = "critic"
        instructions = "Review the greeting, briefly." if code == "v3" else "Review the greeting."
        output = str
        recall = False

    def writer_model(request: ModelRequest) -> ModelResponse:
        done = sum(1 for m in request.messages if m.role == "tool")
        friendly = " friendly" if "friendly" in request.messages[0].content else ""
        _effect(run_input, f"model writer {done}{friendly}")
        return reply("hello") if done >= 2 else reply("", tool_call("work", {"n": done + 1}))

    async def critic_model(request: ModelRequest) -> ModelResponse:
        await _held(run_input.get("hold"))
        _effect(run_input, "model critic")
        return reply("fine")

    if code == "t2":
        def to_critic(output: Any, task: Task, writes: Writes, patched: Patched) -> Any:
            _effect(run_input, "route careful" if patched("careful") else "route")
            return handoff(Critic, output)
    else:
        def to_critic(output: Any, task: Task, writes: Writes) -> Any:  # type: ignore[misc]
            _effect(run_input, "route")
            return handoff(Critic, output)

    Writer.model = FunctionModel(writer_model, name="writer-double")
    Critic.model = FunctionModel(critic_model, name="critic-double")
    route: Any = to_critic if code.startswith("t") else Critic
    return Pipeline("trial", roles=[Writer(), Critic()], ref=REF,
                    version={"v1": "1", "v2": "2", "v3": "3", "v4": "4", "t1": "t1",
                             "t2": "t2"}[code],
                    start=lambda inp: [NewTask("writer", inp)], routes={Writer: route})


def build(run_input: dict[str, Any]) -> Pipeline:
    """The pipeline as this process's deploy (``TRIAL_CODE``, default v1) has it."""
    return make(os.environ.get("TRIAL_CODE", "v1"), run_input)


def effects(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []
