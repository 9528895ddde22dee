"""TaskQueue: claims, leases and fencing, keys, retries, completion and failure."""

from __future__ import annotations

import asyncio
import time

import pytest
from backends import Claimed, Opener

from orchestra._errors import LeaseLostError, NotFoundError, UserError
from orchestra.store import Blackboard, ClaimSpec, Lease, NewTask


async def test_claims_take_the_oldest_ready_task_and_bump_the_attempt(store: Blackboard) -> None:
    run = await store.create_run("p", {}, tasks=[NewTask("a", {"i": i}) for i in range(3)])
    await store.add_tasks(run.id, [NewTask("a", {"i": 9}, not_before=time.time() + 3600)])
    got = [await store.claim_task("w", run_id=run.id) for _ in range(4)]
    assert [t.input["i"] if t else None for t in got] == [0, 1, 2, None]
    assert all(t is not None and (t.attempt, t.status, t.lease_owner) == (1, "running", "w")
               for t in got[:3])
    assert await store.claim_task("w", run_id=run.id, roles=["b"]) is None


async def test_claim_tasks_respects_capacity_and_limit(store: Blackboard) -> None:
    run = await store.create_run("p", {}, tasks=[NewTask(r, {}) for r in "aaabbc"])
    got = await store.claim_tasks("w", capacity={"a": 2, "b": 5}, limit=3, run_id=run.id)
    roles = sorted(t.role for t in got)
    assert len(got) == 3 and roles.count("a") <= 2 and "c" not in roles
    rest = await store.claim_tasks("w", capacity={"a": 9, "b": 9, "c": 9}, limit=9, run_id=run.id)
    assert sorted(t.role for t in got + rest) == list("aaabbc")


async def test_task_keys_are_idempotent(store: Blackboard) -> None:
    run = await store.create_run("p", {})
    first = await store.add_tasks(run.id, [NewTask("a", {"v": 1}, key="k")])
    again = await store.add_tasks(run.id, [NewTask("a", {"v": 2}, key="k")])
    assert [t.id for t in again] == [first[0].id] and again[0].input == {"v": 1}
    assert len(await store.list_tasks(run.id)) == 1
    with pytest.raises(UserError):
        await store.add_tasks(run.id, [NewTask("", {})])


async def test_a_stale_lease_writes_nothing(store: Blackboard, claimed: Claimed) -> None:
    run, task, lease = await claimed(lease_seconds=0.01)
    await asyncio.sleep(0.05)  # the store's clock passes the lease's end: no event to wait on
    released = await store.release_leases(run.id)
    assert [t.id for t in released] == [task.id]
    again = await store.claim_task("w2", run_id=run.id)
    assert again is not None and again.attempt == lease.attempt + 1
    before = await store.events(run.id)
    for write in (store.complete_task(task.id, lease, {"stale": 1}, agent_id=f"{run.id}/coder"),
                  store.fail_task(task.id, lease, "stale"),
                  store.start_step(task.id, 0, 1, "tool", "t", "d", lease)):
        with pytest.raises(LeaseLostError):
            await write
    assert await store.events(run.id) == before
    assert not await store.heartbeat(task.id, lease, 30)
    assert await store.heartbeat(task.id, Lease("w2", again.attempt), 30)
    assert await store.complete_task(task.id, Lease("w2", again.attempt), {"ok": 1},
                                     agent_id=f"{run.id}/coder") == []  # no claim: none
    done = await store.get_task(task.id)
    assert (done.status, done.result) == ("completed", {"ok": 1})


async def test_release_by_owner_requeues_only_that_owners_tasks(store: Blackboard) -> None:
    run = await store.create_run("p", {}, tasks=[NewTask("a", {}), NewTask("a", {})])
    mine = await store.claim_task("dead", run_id=run.id)
    theirs = await store.claim_task("alive", run_id=run.id)
    assert mine is not None and theirs is not None
    released = await store.release_leases(owners=["dead"])
    assert [t.id for t in released] == [mine.id]
    assert (await store.get_task(mine.id)).status == "pending"
    assert (await store.get_task(theirs.id)).status == "running"


async def test_fail_retries_within_budget_then_fails(store: Blackboard) -> None:
    run = await store.create_run("p", {}, tasks=[NewTask("a", {}, max_attempts=2)])
    task = await store.claim_task("w", run_id=run.id)
    assert task is not None
    retried = await store.fail_task(task.id, Lease("w", task.attempt), "e1", retry_at=0.0)
    assert (retried.status, retried.retries) == ("pending", 1)
    task = await store.claim_task("w", run_id=run.id)
    assert task is not None
    failed = await store.fail_task(task.id, Lease("w", task.attempt), "e2", retry_at=0.0)
    assert (failed.status, failed.error) == ("failed", "e2")
    again = await store.retry_failed_tasks(run.id)
    assert [(t.id, t.status, t.retries) for t in again] == [(task.id, "pending", 2)]


async def test_a_claim_says_which_claim_began_the_tasks_retry(store: Blackboard) -> None:
    """``retry_attempt``: the claim that began the current retry, so a later claim of the
    same retry (its worker died, by a takeover or a resume) is known to re-issue the
    retry's first step, on the first go and on every retry alike."""
    run = await store.create_run("p", {}, tasks=[NewTask("a", {}, max_attempts=3)])
    first = await store.claim_task("w", run_id=run.id, lease_seconds=-1)
    assert first is not None and (first.attempt, first.retry_attempt) == (1, 1)
    (taken,) = await store.claim_tasks("w2", capacity={"a": 1}, limit=1, run_id=run.id)
    assert (taken.attempt, taken.retries, taken.retry_attempt) == (2, 0, 1)
    await store.fail_task(taken.id, Lease("w2", taken.attempt), "e1", retry_at=0.0)
    retry = await store.claim_task("w", run_id=run.id)
    assert retry is not None and (retry.attempt, retry.retries, retry.retry_attempt) == (3, 1, 3)
    await store.release_leases(owners=["w"])
    again = await store.claim_task("w", run_id=run.id)
    assert again is not None and (again.attempt, again.retries, again.retry_attempt) == (4, 1, 3)
    await store.fail_task(again.id, Lease("w", again.attempt), "e2", retry_at=0.0)
    third = await store.claim_task("w", run_id=run.id)
    assert third is not None and (third.attempt, third.retries, third.retry_attempt) == (5, 2, 5)
    failed = await store.fail_task(third.id, Lease("w", 5), "e3", retry_at=0.0)
    assert failed.status == "failed"  # its budget spent; a resume gives it another go
    (revived,) = await store.retry_failed_tasks(run.id)
    assert (revived.status, revived.retries, revived.retry_attempt) == ("pending", 3, 6)
    last = await store.claim_task("w", run_id=run.id)
    assert last is not None and (last.attempt, last.retry_attempt) == (6, 6)
    assert (await store.get_task(last.id)).retry_attempt == 6


async def test_concurrent_claims_from_two_handles_never_share_a_task(open_store: Opener) -> None:
    a, b = await open_store(), await open_store()
    run = await a.create_run("p", {}, tasks=[NewTask("x", {"i": i}) for i in range(60)])

    async def drain(store: Blackboard, owner: str) -> list[str]:
        ids = []
        while (task := await store.claim_task(owner, run_id=run.id)) is not None:
            ids.append(task.id)
        return ids

    results = await asyncio.gather(*(drain(s, f"w{i}") for i, s in enumerate([a, b, a, b])))
    ids = [i for r in results for i in r]
    assert len(ids) == len(set(ids)) == 60


async def test_an_expired_lease_is_taken_over_by_the_next_claim(store: Blackboard) -> None:
    """A dead worker's task goes to the next claimant, before older pending work, with
    its attempt counted; a live lease is never taken, and the old owner is fenced."""
    run = await store.create_run("p", {}, tasks=[NewTask("a", i) for i in range(2)])
    live = await store.claim_task("live", lease_seconds=60)
    dead = await store.claim_task("dead", lease_seconds=-1)
    assert dead is not None and live is not None
    await store.add_tasks(run.id, [NewTask("a", 9), NewTask("b", 9)])
    assert await store.claim_tasks("w", capacity={"b": 1}, limit=1, run_id=run.id) != []
    taken = await store.claim_tasks("w", capacity={"a": 1}, limit=1, run_id=run.id)
    assert [(t.id, t.attempt, t.lease_owner) for t in taken] == [(dead.id, 2, "w")]
    requeued = [e.data for e in await store.events(run.id) if e.kind == "task.requeued"]
    assert requeued == [{"task": dead.id, "role": "a", "attempt": 1, "owner": "dead",
                         "cause": "lease expired"}]
    assert (await store.claim_task("x", run_id=run.id)).input == 9  # pending next
    assert await store.claim_task("y", run_id=run.id) is None  # the live lease stays
    assert (await store.get_task(live.id)).lease_owner == "live"
    with pytest.raises(LeaseLostError):
        await store.complete_task(dead.id, Lease("dead", 1), "late", agent_id="a")
    assert not await store.heartbeat(dead.id, Lease("dead", 1), 30)


async def test_a_hand_in_claims_pending_work_and_leaves_expired_leases_to_a_claim(
        store: Blackboard) -> None:
    """Handing in a task claims the run's next pending task without scanning for dead
    workers' leases: the next ordinary claim takes those over. Events stay in order."""
    run = await store.create_run("p", {}, tasks=[NewTask("a", 0), NewTask("a", 1)])
    mine = await store.claim_task("w", run_id=run.id)
    dead = await store.claim_task("dead", run_id=run.id, lease_seconds=-1)
    assert dead is not None and mine is not None
    await store.add_tasks(run.id, [NewTask("a", 2)])
    nxt = await store.complete_task(
        mine.id, Lease("w", mine.attempt), "ok", agent_id=f"{run.id}/a",
        claim=ClaimSpec("w", {"a": 2}, 2, run.id, 30.0))
    assert [t.input for t in nxt] == [2]
    taken = await store.claim_tasks("w2", capacity={"a": 2}, limit=2, run_id=run.id)
    assert [(t.id, t.attempt) for t in taken] == [(dead.id, 2)]
    events = await store.events(run.id)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert [(e.kind, e.data.get("task")) for e in events[-4:]] == [
        ("task.completed", mine.id), ("task.claimed", nxt[0].id),
        ("task.requeued", dead.id), ("task.claimed", dead.id)]


async def test_a_claim_across_runs_writes_each_runs_events_in_order(store: Blackboard) -> None:
    """One claim over several runs: each run's takeover is announced before its claims,
    and each run's event seq stays gap-free."""
    runs = [await store.create_run("p", {}, tasks=[NewTask("a", 0), NewTask("a", 1)])
            for _ in range(2)]
    dead = [await store.claim_task("dead", run_id=r.id, lease_seconds=-1) for r in runs]
    got = await store.claim_tasks("w", capacity={"a": 9}, limit=9)
    assert sorted(t.id for t in got if t.attempt == 2) == sorted(t.id for t in dead if t)
    assert len(got) == 4
    for run in runs:
        events = await store.events(run.id)
        assert [e.seq for e in events] == list(range(1, len(events) + 1))
        kinds = [e.kind for e in events if e.kind in ("task.claimed", "task.requeued")]
        assert kinds == ["task.claimed", "task.requeued", "task.claimed", "task.claimed"]


async def test_served_until_sees_renewals_and_leases(store: Blackboard) -> None:
    run = await store.create_run("p", {}, tasks=[NewTask("a", 1)])
    idle = await store.create_run("p", {})
    assert await store.served_until([run.id, idle.id]) == {run.id: None, idle.id: None}
    before = time.time()
    await store.serve_run(run.id, "w", 60)
    until = (await store.served_until([run.id]))[run.id]
    assert until is not None and until >= before + 60
    await store.serve_run(run.id, "w", 0)  # it stopped serving
    until = (await store.served_until([run.id]))[run.id]
    assert until is not None and until <= time.time()
    await store.claim_task("v", run_id=run.id, lease_seconds=120)  # a live lease counts too
    until = (await store.served_until([run.id]))[run.id]
    assert until is not None and until >= before + 120
    with pytest.raises(NotFoundError):
        await store.serve_run("nope", "w", 60)


async def test_served_until_is_on_the_callers_clock(store: Blackboard,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A host whose clock is an hour ahead of the store's still sees a run it serves
    as served for the lease it asked for: the times come back on the caller's clock."""
    run = await store.create_run("p", {})
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() + 3600)
    await store.serve_run(run.id, "w", 60)
    until = (await store.served_until([run.id]))[run.id]
    assert until is not None and time.time() + 50 <= until <= time.time() + 70


async def test_claimable_runs_are_the_live_runs_with_a_task_to_claim_now(
        store: Blackboard) -> None:
    """One query tells a worker which runs it could claim in: due pending tasks and
    expired leases count; future retries, live leases and finished runs do not."""
    due = await store.create_run("p", {}, tasks=[NewTask("a", 1)])
    later = await store.create_run("p", {}, tasks=[NewTask("a", 1, not_before=time.time() + 3600)])
    held = await store.create_run("p", {}, tasks=[NewTask("a", 1)])
    await store.claim_task("live", run_id=held.id, lease_seconds=60)
    dead = await store.create_run("p", {}, tasks=[NewTask("a", 1)])
    await store.claim_task("dead", run_id=dead.id, lease_seconds=-1)
    gone = await store.create_run("p", {}, tasks=[NewTask("a", 1)])
    await store.set_run_status(gone.id, "cancelled")
    parked = await store.create_run("p", {}, tasks=[NewTask("a", 1)])
    await store.set_run_status(parked.id, "waiting")  # e.g. an approval was just decided
    assert later.id and held.id  # neither is claimable
    assert await store.claimable_runs(limit=10) == [due.id, dead.id, parked.id]
    assert await store.claimable_runs(limit=1) == [due.id]
    assert await store.claimable_runs(limit=10, exclude=[due.id, parked.id]) == [dead.id]
