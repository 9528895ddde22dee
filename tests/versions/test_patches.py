"""``patched(name)`` in a tool (``ctx.patched``) and in a route (a ``patched``
parameter): a task begun before the patch keeps the old tool and route when it finishes
under the new code, a task begun under it gets the new ones, and ``upgrade --patched``
moves a run whose differences all sit behind them (``trial_pipeline``, codes t1/t2)."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from trial_pipeline import effects, make

from orchestra import Coordinator, FunctionModel, NewTask, Pipeline, Role, SQLiteBlackboard, reply
from orchestra._errors import RoleDefinitionError
from orchestra.coordinator.upgrade import upgrade_run
from orchestra.tools import ToolContext


async def _killed_in_work_2(store: SQLiteBlackboard, tmp_path: Path) -> str:
    """A t1 run stopped while its writer's second ``work`` call was in flight."""
    hold = tmp_path / "hold_work"
    hold.touch()
    run_input = {"effects": str(tmp_path / "effects.txt"), "hold_work": str(hold)}
    coord = Coordinator(store, make("t1", run_input))
    run = await coord.start(run_input)
    drive = asyncio.create_task(coord.drive(run.id))
    for _ in range(500):
        if "work 2 start" in effects(tmp_path / "effects.txt"):
            break
        await asyncio.sleep(0.02)
    drive.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await drive
    await coord.interrupted(run.id)
    hold.unlink()
    return run.id


async def test_a_task_begun_before_the_patch_keeps_the_old_tool_and_route(
        tmp_path: Path) -> None:
    async with await SQLiteBlackboard.open(tmp_path / "s.db") as store:
        run_id = await _killed_in_work_2(store, tmp_path)
        before = effects(tmp_path / "effects.txt")
        assert before == ["model writer 0", "work 1 start", "work 1 done", "model writer 1",
                          "work 2 start"]
        t2 = make("t2", {"effects": str(tmp_path / "effects.txt")})
        refused, _ = await upgrade_run(store, run_id, t2.fingerprint)
        assert refused.difference is not None and refused.difference.parts == ("patches",)
        check, moved = await upgrade_run(store, run_id, t2.fingerprint, patched=True)
        assert check.moves and moved.version == t2.fingerprint.id
        assert (await Coordinator(store, t2).resume(run_id)).status == "completed"
        # the writer began under t1: its tool call in flight runs again as t1 ran it, and
        # its route is t1's; no completed step ran again
        assert effects(tmp_path / "effects.txt") == [
            *before, "work 2 start", "work 2 done", "model writer 2", "route",
            "model critic"]

        fresh = {"effects": str(tmp_path / "fresh.txt")}
        run = await Coordinator(store, make("t2", fresh)).run(fresh)
        assert run.status == "completed"
        assert effects(tmp_path / "fresh.txt") == [
            "model writer 0", "work 1 start", "work 1 done carefully", "model writer 1",
            "work 2 start", "work 2 done carefully", "model writer 2", "route careful",
            "model critic"]


async def test_a_route_changed_behind_a_patch_moves_only_with_patched(tmp_path: Path) -> None:
    """A completed writer's route ran under t1; t2's route takes ``patched``: the route
    differs unless the check compares the code before its patches."""
    async with await SQLiteBlackboard.open(tmp_path / "s.db") as store:
        run_input = {"effects": str(tmp_path / "effects.txt"), "hold": str(tmp_path / "h")}
        (tmp_path / "h").touch()
        coord = Coordinator(store, make("t1", run_input))
        run = await coord.start(run_input)
        drive = asyncio.create_task(coord.drive(run.id))
        for _ in range(500):
            if await store.list_tasks(run.id, role="critic", status="running"):
                break
            await asyncio.sleep(0.02)
        drive.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await drive
        await coord.interrupted(run.id)
        (tmp_path / "h").unlink()
        t2 = make("t2", run_input)
        key = "role:writer:patches"  # as before the patch: only the route differs
        route_only = replace(t2.fingerprint, parts={**t2.fingerprint.parts,
                                                    key: t2.fingerprint.unpatched[key]})
        refused, _ = await upgrade_run(store, run.id, route_only)
        assert refused.difference is not None and refused.difference.step is None
        assert refused.difference.parts == ("route",)
        check, _ = await upgrade_run(store, run.id, t2.fingerprint, patched=True)
        assert check.moves and check.checked == 6  # 3 model steps, 2 tools, 1 route
        assert (await Coordinator(store, t2).resume(run.id)).status == "completed"
        assert effects(tmp_path / "effects.txt").count("route") == 1  # ran once, under t1


class _Undeclared(Role):
    """Answer."""

    name = "solo"
    output = str
    recall = False
    max_attempts = 1
    patches = frozenset({"known"})

    async def check_output(self, ctx: ToolContext, output: Any) -> Any:
        ctx.patched("unknown")
        return None


async def test_a_patch_the_role_does_not_declare_fails_the_task_naming_it(
        tmp_path: Path) -> None:
    _Undeclared.model = FunctionModel(lambda request: reply("hi"), name="double")
    pipeline = Pipeline("undeclared", roles=[_Undeclared()],
                        start=lambda inp: [NewTask("solo", inp)])
    async with await SQLiteBlackboard.open(tmp_path / "s.db") as store:
        run = await Coordinator(store, pipeline).run({})
        assert run.status == "failed"
        [task] = await store.list_tasks(run.id)
        assert "patched('unknown') names no patch of the role" in str(task.error)
    with pytest.raises(RoleDefinitionError, match="outside a task"):
        ToolContext("r", "t", "a", "role", 1, "k", board=None).patched("x")  # type: ignore[arg-type]
