"""``upgrade``: a run moves to other code only when its journal would replay the same
(``orchestra.coordinator.upgrade``), and a process of another version never runs it."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from trial_pipeline import effects, make

from orchestra import Coordinator, SQLiteBlackboard, UserError
from orchestra.coordinator.upgrade import upgrade_run
from orchestra.coordinator.versions import VersionMismatchError


async def _writer_done(store: SQLiteBlackboard, tmp_path: Path) -> str:
    """A v1 run whose writer completed (three model steps, two tool steps) and whose
    critic's first model call was in flight when its drive stopped (Ctrl-C)."""
    hold = tmp_path / "hold"
    hold.touch()
    run_input = {"effects": str(tmp_path / "effects.txt"), "hold": str(hold)}
    coord = Coordinator(store, make("v1", run_input))
    run = await coord.start(run_input)
    drive = asyncio.create_task(coord.drive(run.id))
    for _ in range(500):  # polls the store, as another process would see it
        if await store.list_tasks(run.id, role="critic", status="running"):
            break
        await asyncio.sleep(0.02)
    drive.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await drive
    await coord.interrupted(run.id)
    hold.unlink()
    return run.id


async def test_a_reworded_instruction_is_refused_naming_the_step(tmp_path: Path) -> None:
    async with await SQLiteBlackboard.open(tmp_path / "s.db") as store:
        run_id = await _writer_done(store, tmp_path)
        v1 = (await store.get_run(run_id)).version
        v2 = make("v2", {"effects": str(tmp_path / "effects.txt")})
        check, after = await upgrade_run(store, run_id, v2.fingerprint)
        assert not check.moves and after.version == v1
        assert check.difference is not None and check.difference.role == "writer"
        assert check.difference.step == 1 and check.difference.parts == ("instructions",)
        assert check.checked == 0
        with pytest.raises(VersionMismatchError, match=f"started on version {v1}"):
            await Coordinator(store, v2).resume(run_id)
        assert [e.kind for e in await store.events(run_id, kinds=("run.upgraded",))] == []


async def test_a_change_no_completed_step_meets_moves_the_run(tmp_path: Path) -> None:
    async with await SQLiteBlackboard.open(tmp_path / "s.db") as store:
        run_id = await _writer_done(store, tmp_path)
        before = effects(tmp_path / "effects.txt")
        v3 = make("v3", {"effects": str(tmp_path / "effects.txt")})
        check, moved = await upgrade_run(store, run_id, v3.fingerprint)
        assert check.moves and check.checked == 6  # 3 model steps, 2 tools, 1 route
        assert moved.version == v3.fingerprint.id and moved.version.startswith("3@")
        [event] = await store.events(run_id, kinds=("run.upgraded",))
        assert isinstance(event.data, dict) and event.data["to"] == moved.version
        done = await Coordinator(store, v3).resume(run_id)
        assert done.status == "completed"
        # nothing the writer did ran again: only the critic's call is new
        assert effects(tmp_path / "effects.txt") == [*before, "model critic"]


async def test_a_run_moves_only_while_nobody_serves_it(tmp_path: Path) -> None:
    async with await SQLiteBlackboard.open(tmp_path / "s.db") as store:
        run_id = await _writer_done(store, tmp_path)
        await store.serve_run(run_id, "a-live-worker", 30)
        v3 = make("v3", {"effects": str(tmp_path / "effects.txt")})
        with pytest.raises(UserError, match="being served by a live process"):
            await upgrade_run(store, run_id, v3.fingerprint)
        assert (await store.get_run(run_id)).version != v3.fingerprint.id


async def test_a_change_behind_a_patch_moves_with_patched_and_new_runs_take_it(
        tmp_path: Path) -> None:
    async with await SQLiteBlackboard.open(tmp_path / "s.db") as store:
        run_id = await _writer_done(store, tmp_path)
        before = effects(tmp_path / "effects.txt")
        v4 = make("v4", {"effects": str(tmp_path / "effects.txt")})
        refused, _ = await upgrade_run(store, run_id, v4.fingerprint)
        assert refused.difference is not None
        assert refused.difference.parts == ("instructions", "patches")
        check, moved = await upgrade_run(store, run_id, v4.fingerprint, patched=True)
        assert check.moves and moved.version == v4.fingerprint.id
        assert (await Coordinator(store, v4).resume(run_id)).status == "completed"
        assert effects(tmp_path / "effects.txt") == [*before, "model critic"]
        # the writer's journal from before the patch recorded none: it would ask as before
        [writer] = await store.list_tasks(run_id, role="writer")
        first = (await store.get_steps(writer.id, 0))[0]
        assert isinstance(first.output, dict) and "patches" not in first.output

        # a run that starts under the patched code runs with the patch, and says so
        fresh = {"effects": str(tmp_path / "fresh.txt")}
        run = await Coordinator(store, make("v4", fresh)).run(fresh)
        assert run.status == "completed" and run.version == v4.fingerprint.id
        assert effects(tmp_path / "fresh.txt")[0] == "model writer 0 friendly"
        [writer] = await store.list_tasks(run.id, role="writer")
        first = (await store.get_steps(writer.id, 0))[0]
        assert isinstance(first.output, dict) and first.output["patches"] == ["friendly"]
