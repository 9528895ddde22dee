"""Claiming, leases and fencing: two workers never write for the same task attempt."""

from __future__ import annotations

import asyncio
import time

import pytest
from store_helpers import Claim

from orchestra._errors import LeaseLostError
from orchestra._types import Message
from orchestra.store import (
    Lease,
    NewTask,
    SQLiteBlackboard,
    StepResult,
    Writes,
)


async def test_claim_takes_the_oldest_claimable_task(store: SQLiteBlackboard) -> None:
    later = time.time() + 60
    run = await store.create_run("p", {}, tasks=[
        NewTask("coder", 1), NewTask("reviewer", 2), NewTask("coder", 3, not_before=later),
        NewTask("coder", 4)])
    first = await store.claim_task("w", roles=["coder"])
    assert first is not None and (first.input, first.status, first.attempt, first.lease_owner) == (
        1, "running", 1, "w")
    assert first.lease_expires_at is not None and first.lease_expires_at > time.time() + 25
    second = await store.claim_task("w", run_id=run.id, roles={"coder"})
    assert second is not None and second.input == 4  # 3 is not due yet
    assert await store.claim_task("w", roles=["coder"]) is None
    third = await store.claim_task("w")
    assert third is not None and third.input == 2
    claimed = [e.data for e in await store.events(run.id) if e.kind == "task.claimed"]
    assert claimed[0] == {"task": first.id, "role": "coder", "attempt": 1, "owner": "w"}


async def test_tasks_of_finished_runs_are_not_claimed(store: SQLiteBlackboard) -> None:
    run = await store.create_run("p", {}, tasks=[NewTask("coder", 1)])
    await store.set_run_status(run.id, "completed")
    assert await store.claim_task("w") is None
    other = await store.create_run("p", {}, tasks=[NewTask("coder", 2)])
    assert await store.claim_task("w", run_id=run.id) is None
    task = await store.claim_task("w", run_id=other.id)
    assert task is not None and task.run_id == other.id


async def test_concurrent_claims_never_share_a_task(store: SQLiteBlackboard) -> None:
    await store.create_run("p", {}, tasks=[NewTask("coder", i) for i in range(30)])
    claims = await asyncio.gather(*(store.claim_task(f"w{i}") for i in range(40)))
    ids = [t.id for t in claims if t is not None]
    assert len(ids) == len(set(ids)) == 30


async def test_heartbeat_extends_a_held_lease_only(store: SQLiteBlackboard,
                                                  claimed: Claim) -> None:
    run, task, lease = await claimed(lease_seconds=5)
    assert await store.heartbeat(task.id, lease, 100)
    extended = await store.get_task(task.id)
    assert extended.lease_expires_at is not None and extended.lease_expires_at > time.time() + 90
    assert not await store.heartbeat(task.id, Lease("someone-else", lease.attempt), 100)
    assert not await store.heartbeat(task.id, Lease(lease.owner, lease.attempt + 1), 100)
    assert "task.heartbeat" not in {e.kind for e in await store.events(run.id)}


async def test_release_requeues_expired_and_named_owners(store: SQLiteBlackboard) -> None:
    run = await store.create_run("p", {}, tasks=[NewTask("a", i) for i in range(3)])
    alive = await store.claim_task("w2", lease_seconds=60)
    dead_owner = await store.claim_task("w3", lease_seconds=60)
    expired = await store.claim_task("w1", lease_seconds=-1)
    assert expired and alive and dead_owner
    released = await store.release_leases(run.id, owners=["w3"])
    assert {t.id for t in released} == {expired.id, dead_owner.id}
    assert all(t.status == "pending" and t.lease_owner is None for t in released)
    assert (await store.get_task(alive.id)).status == "running"
    requeued = [e.data for e in await store.events(run.id) if e.kind == "task.requeued"]
    assert {d["owner"] for d in requeued} == {"w1", "w3"}
    assert await store.release_leases("some-other-run-id-that-has-none") == []


async def test_old_lease_is_fenced_after_release_and_reclaim(store: SQLiteBlackboard,
                                                             claimed: Claim) -> None:
    run, task, old = await claimed(owner="slow")
    await store.release_leases(owners=["slow"])
    new_task = await store.claim_task("fast")
    assert new_task is not None and new_task.id == task.id and new_task.attempt == 2
    new = Lease("fast", new_task.attempt)
    step = StepResult(task.id, 0, 1, "model", "m", "d")
    writes = Writes(messages=[Message("user", "late")])
    for write in (
        store.start_step(task.id, 0, 1, "model", "m", "d", old),
        store.complete_step(step, old, agent_id="a", writes=writes),
        store.complete_task(task.id, old, "late result", agent_id="a"),
        store.fail_task(task.id, old, "late error"),
        store.request_approval(task.id, old, retry=0, step=1, tool="t", arguments={}),
    ):
        with pytest.raises(LeaseLostError, match=f"task {task.id}"):
            await write
    assert not await store.heartbeat(task.id, old, 30)
    assert await store.get_steps(task.id, 0) == []
    assert await store.get_messages("a") == []
    await store.complete_task(task.id, new, "fresh", agent_id=f"{run.id}/coder")
    assert (await store.get_task(task.id)).result == "fresh"


async def test_fail_task_retries_within_budget_then_fails(store: SQLiteBlackboard) -> None:
    run = await store.create_run("p", {}, tasks=[NewTask("coder", 1, max_attempts=2)])
    task = await store.claim_task("w")
    assert task is not None
    retry_at = time.time() - 1
    retried = await store.fail_task(task.id, Lease("w", task.attempt), "flaky", retry_at=retry_at)
    assert (retried.status, retried.retries, retried.not_before, retried.lease_owner) == (
        "pending", 1, retry_at, None)
    again = await store.claim_task("w")
    assert again is not None and again.attempt == 2
    failed = await store.fail_task(task.id, Lease("w", again.attempt), "still flaky",
                                   retry_at=retry_at)
    assert (failed.status, failed.error) == ("failed", "still flaky")
    assert [e.kind for e in await store.events(run.id)][-3:] == ["task.retrying", "task.claimed",
                                                                 "task.failed"]


async def test_cancelling_a_run_fences_its_running_tasks(store: SQLiteBlackboard,
                                                         claimed: Claim) -> None:
    run, task, lease = await claimed()
    await store.add_tasks(run.id, [NewTask("reviewer", 1)])
    await store.set_run_status(run.id, "cancelled")
    assert await store.task_counts(run.id) == {"cancelled": 2}
    with pytest.raises(LeaseLostError):
        await store.complete_task(task.id, lease, "done", agent_id="a")
    kinds = [e.kind for e in await store.events(run.id)]
    assert kinds[-3:] == ["run.cancelled", "task.cancelled", "task.cancelled"]

