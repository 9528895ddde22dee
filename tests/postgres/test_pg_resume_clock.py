"""``Coordinator.resume`` judges leases on the store's clock (PostgreSQL's), not this
host's: a host whose clock is off neither steals a live worker's run nor refuses a
run whose worker's lease ran out."""

from __future__ import annotations

import asyncio
import time

import pytest
from pydantic import BaseModel

from orchestra import Coordinator, FunctionModel, NewTask, Pipeline, Role, reply
from orchestra._errors import UserError
from orchestra.store.postgres import PostgresBlackboard


class Answer(BaseModel):
    value: int


class Solver(Role):
    """You answer {"value": 1}."""

    name = "solver"
    output = Answer


def _pipeline() -> Pipeline:
    model = FunctionModel(lambda request: reply('{"value": 1}'))
    return Pipeline("p", roles=[Solver()], start=lambda i: [NewTask("solver", i)],
                    model=model)


async def _leased_elsewhere(store: PostgresBlackboard, lease_seconds: float) -> str:
    """A running run whose one task another host's worker holds for ``lease_seconds``."""
    run = await store.create_run("p", {}, tasks=[NewTask("solver", {})])
    await store.set_run_status(run.id, "running")
    task = await store.claim_task("elsewhere:1:abc", run_id=run.id,
                                  lease_seconds=lease_seconds)
    assert task is not None
    return run.id


@pytest.mark.parametrize("skew", [3600.0, -3600.0])
async def test_resume_refuses_a_live_lease_whatever_this_hosts_clock(
        dsn: str, monkeypatch: pytest.MonkeyPatch, skew: float) -> None:
    store = await PostgresBlackboard.open(dsn)
    try:
        run_id = await _leased_elsewhere(store, 600)
        real = time.time
        monkeypatch.setattr(time, "time", lambda: real() + skew)
        with pytest.raises(UserError, match="being run by another worker"):
            # a host taking the live lease as expired would wait on it (bounded here)
            await asyncio.wait_for(Coordinator(store, _pipeline()).resume(run_id), 30)
        assert (await store.list_tasks(run_id))[0].lease_owner == "elsewhere:1:abc"
    finally:
        await store.close()


async def test_resume_takes_over_an_expired_lease_though_this_host_is_behind(
        dsn: str, monkeypatch: pytest.MonkeyPatch) -> None:
    store = await PostgresBlackboard.open(dsn)
    try:
        run_id = await _leased_elsewhere(store, 0.05)
        await asyncio.sleep(0.1)  # the lease runs out on the database's clock
        real = time.time
        monkeypatch.setattr(time, "time", lambda: real() - 3600)  # here it looks live
        run = await asyncio.wait_for(Coordinator(store, _pipeline()).resume(run_id), 30)
        assert run.status == "completed"
    finally:
        await store.close()
