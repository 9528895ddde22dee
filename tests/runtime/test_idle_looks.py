"""A drive whose work another worker holds looks for work once per poll: a look that
found nothing is followed by a full wait, not by a second look straight after (the
timed-out wait used to wake its own loop, so every idle poll claimed and counted twice,
and N workers on R runs paid 2 x N x R looks per poll)."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path
from typing import Any

from orchestra import (
    Coordinator,
    CoordinatorSettings,
    FunctionModel,
    NewTask,
    Pipeline,
    Role,
    SQLiteBlackboard,
    reply,
)


class Idle(Role):
    """You answer."""

    name = "idle"
    output = str
    recall = False


async def test_an_idle_drive_waits_a_whole_poll_between_looks(tmp_path: Path) -> None:
    pipeline = Pipeline("idle", roles=[Idle()], model=FunctionModel(lambda _r: reply("x")),
                        start=lambda inp: [NewTask("idle", inp)])
    settings = CoordinatorSettings(poll_interval=0.01, idle_poll_max=0.02, shared=True)
    async with await SQLiteBlackboard.open(tmp_path / "s.db") as store:
        coord = Coordinator(store, pipeline, settings=settings)
        run = await coord.start({})
        held = await store.claim_task("another:1:w", run_id=run.id, lease_seconds=600)
        assert held is not None  # another live worker holds the run's only task
        trace: list[str] = []
        claim, wait = store.claim_tasks, coord.jobs.wait
        enough = asyncio.Event()

        async def claiming(*args: Any, **kwargs: Any) -> Any:
            trace.append("look")
            if trace.count("look") >= 8:
                enough.set()
            return await claim(*args, **kwargs)

        async def waiting(run_id: str, seconds: float) -> bool:
            woken = await wait(run_id, seconds)
            trace.append("woken" if woken else "waited")
            return woken

        store.claim_tasks = claiming  # type: ignore[method-assign]
        coord.jobs.wait = waiting  # type: ignore[method-assign]
        drive = asyncio.create_task(coord.drive(run.id))
        await asyncio.wait_for(enough.wait(), timeout=30)
        drive.cancel()
        await asyncio.gather(drive, return_exceptions=True)
    looks = [i for i, what in enumerate(trace) if what == "look"]
    assert trace.count("woken") == 0, trace  # nothing happened here: no wake-up
    for a, b in itertools.pairwise(looks):  # between two looks, a whole wait
        assert "waited" in trace[a:b], trace
