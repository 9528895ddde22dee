"""A run cancelled in the store by someone else (another process) stops here, and one
read per poll serves every run a coordinator drives."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from orchestra import (
    Coordinator,
    CoordinatorSettings,
    FunctionModel,
    ModelRequest,
    ModelResponse,
    NewTask,
    Pipeline,
    Role,
    SQLiteBlackboard,
    reply,
)


class Slow(Role):
    """You answer slowly."""

    name = "slow"
    output = str
    recall = False


async def test_runs_cancelled_elsewhere_stop_and_share_one_status_read(tmp_path: Path) -> None:
    started, calls = asyncio.Event(), []

    async def slow(request: ModelRequest) -> ModelResponse:
        calls.append(request)
        if len(calls) == 3:
            started.set()  # every run is created and in its model call
        await asyncio.sleep(30)
        return reply("late")

    pipeline = Pipeline("slow", roles=[Slow()], model=FunctionModel(slow),
                        start=lambda inp: [NewTask("slow", inp)])
    settings = CoordinatorSettings(cancel_poll=0.1, poll_interval=0.05)
    async with await SQLiteBlackboard.open(tmp_path / "s.db") as store:
        reads: list[int] = []
        statuses = store.run_statuses

        async def counting(run_ids: list[str]) -> dict[str, str]:
            reads.append(len(run_ids))
            return await statuses(run_ids)  # type: ignore[return-value]

        store.run_statuses = counting  # type: ignore[method-assign,assignment]
        coord = Coordinator(store, pipeline, settings=settings)
        drives = [asyncio.create_task(coord.run({"i": i})) for i in range(3)]
        await started.wait()
        runs = [r.id for r in await store.list_runs()]
        t0 = time.monotonic()
        for run_id in runs:  # what `orchestra cancel` does from another process
            await store.set_run_status(run_id, "cancelled")
        done = await asyncio.wait_for(asyncio.gather(*drives), timeout=10)
        waited = time.monotonic() - t0
    assert [r.status for r in done] == ["cancelled"] * 3
    assert waited < 5, waited  # generous: the poll is 0.1 s; the model would take 30 s
    assert reads and max(reads) == 3  # one read covered all three runs
