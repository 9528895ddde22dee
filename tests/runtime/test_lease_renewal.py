"""A live drive keeps its leases through a slow start and a failed renewal round.

Another worker takes over any task whose lease expired, so a drive must renew the
leases of the tasks it starts from the moment it claims them (not only once the other
writes of its start are through), and one failed renewal round (a store busy or cut
off for a moment) must not end its renewals for good.
"""

from __future__ import annotations

import asyncio
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
from orchestra._errors import StoreError

LEASE = 0.6


class Slow(Role):
    """You answer slowly."""

    name = "slow"
    output = str
    recall = False


async def _answer(request: ModelRequest) -> ModelResponse:
    await asyncio.sleep(5 * LEASE)  # several leases long: renewals must keep it
    return reply("done")


async def test_a_drive_keeps_its_leases_through_a_slow_start_and_a_failed_renewal(
        tmp_path: Path) -> None:
    pipeline = Pipeline("slow", roles=[Slow()], model=FunctionModel(_answer),
                        start=lambda inp: [NewTask("slow", inp)])
    settings = CoordinatorSettings(lease_seconds=LEASE, poll_interval=0.05)
    async with await SQLiteBlackboard.open(tmp_path / "s.db") as store:
        serve = store.serve_run
        calls = 0

        async def flaky_serve(run_id: str, owner: str, lease_seconds: float) -> None:
            nonlocal calls
            calls += 1
            if calls == 1:  # the drive's start: held up past the lease by a busy store
                await asyncio.sleep(1.5 * LEASE)
            elif calls == 2:  # the first renewal round: the store fails once
                raise StoreError("database is locked")
            await serve(run_id, owner, lease_seconds)

        store.serve_run = flaky_serve  # type: ignore[method-assign]
        stolen: list[str] = []

        async def thief() -> None:  # another worker, taking over every expired lease
            while True:
                stolen.extend(t.id for t in await store.claim_tasks(
                    "thief", capacity={"slow": 1}, limit=1, lease_seconds=60))
                await asyncio.sleep(0.05)

        other = asyncio.create_task(thief())
        try:
            run = await asyncio.wait_for(
                Coordinator(store, pipeline, settings=settings).run({"i": 1}), timeout=30)
        finally:
            other.cancel()
        assert calls >= 3  # renewals went on after the failed round
        assert stolen == [] and run.status == "completed"
        [task] = await store.list_tasks(run.id)
        assert task.attempt == 1
