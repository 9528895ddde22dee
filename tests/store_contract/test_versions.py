"""Runs' versions, the same on every backend: recorded at creation, kept by a fork, named
by a worker's look (which finds no run of another version) and by its claims (which take
no task of one), and moved only on purpose."""

from __future__ import annotations

import pytest

from orchestra._errors import UserError
from orchestra.store import (
    Blackboard,
    ClaimSpec,
    Lease,
    NewHandoff,
    NewTask,
    StepResult,
    Writes,
)


async def test_a_look_names_the_versions_it_serves(store: Blackboard) -> None:
    one = await store.create_run("p", {}, tasks=[NewTask("a", 1)], version="1@aaa",
                                 manifest={"id": "1@aaa", "parts": {"x": "1"}})
    two = await store.create_run("p", {}, tasks=[NewTask("a", 1)], version="2@bbb")
    old = await store.create_run("p", {}, tasks=[NewTask("a", 1)])  # from before versions
    assert (one.version, two.version, old.version) == ("1@aaa", "2@bbb", "")
    assert (await store.get_run(one.id)).version == "1@aaa"
    assert await store.claimable_runs(limit=10) == [one.id, two.id, old.id]
    assert await store.claimable_runs(limit=10, versions=["1@aaa"]) == [one.id, old.id]
    assert await store.claimable_runs(limit=10, versions=["2@bbb"]) == [two.id, old.id]
    assert await store.claimable_runs(limit=10, versions=[]) == [old.id]
    [created] = await store.events(one.id, kinds=("run.created",))
    assert isinstance(created.data, dict) and created.data["version"]["parts"] == {"x": "1"}
    fork = await store.fork_run(one.id, 1)
    assert fork.version == "1@aaa"


async def test_a_run_moves_to_another_version_once_and_only_unserved(
        store: Blackboard) -> None:
    run = await store.create_run("p", {}, tasks=[NewTask("a", 1)], version="1@aaa")
    await store.serve_run(run.id, "worker", 60)
    with pytest.raises(UserError, match="being served by a live process"):
        await store.move_version(run.id, "1@aaa", "2@bbb", {"to": "2@bbb"})
    assert (await store.get_run(run.id)).version == "1@aaa"
    await store.serve_run(run.id, "worker", 0)
    moved = await store.move_version(run.id, "1@aaa", "2@bbb", {"to": "2@bbb"})
    assert moved.version == "2@bbb" == (await store.get_run(run.id)).version
    [event] = await store.events(run.id, kinds=("run.upgraded",))
    assert event.data == {"to": "2@bbb"} and moved.last_seq == event.seq
    with pytest.raises(UserError, match="not 1@aaa"):  # a second move from the old version
        await store.move_version(run.id, "1@aaa", "3@ccc", {})
    assert await store.claimable_runs(limit=10, versions=["1@aaa"]) == []
    assert await store.claimable_runs(limit=10, versions=["2@bbb"]) == [run.id]


async def test_live_versions_are_those_a_live_process_serves(store: Blackboard) -> None:
    one = await store.create_run("p", {}, tasks=[NewTask("a", 1)], version="1@aaa")
    two = await store.create_run("p", {}, tasks=[NewTask("a", 1)], version="2@bbb")
    await store.create_run("p", {}, tasks=[NewTask("a", 1)])  # from before versions
    assert await store.live_versions() == set()
    await store.serve_run(two.id, "worker-2", 60)
    assert await store.live_versions() == {"2@bbb"}
    assert await store.claim_task("worker-1", run_id=one.id, lease_seconds=60) is not None
    assert await store.live_versions() == {"1@aaa", "2@bbb"}  # a task lease serves it too
    await store.serve_run(two.id, "worker-2", 0)  # stopped serving
    assert await store.live_versions() == {"1@aaa"}


async def test_a_claim_takes_only_tasks_of_runs_on_the_versions_it_serves(
        store: Blackboard) -> None:
    """The filter sits in the claim statements themselves (pending tasks and expired
    leases alike): a claimer serving v2 takes nothing of a v1 run, even by its id."""
    one = await store.create_run("p", {}, tasks=[NewTask("a", 1), NewTask("a", 2)],
                                 version="1@aaa")
    old = await store.create_run("p", {}, tasks=[NewTask("a", 0)])  # from before versions
    dead = await store.claim_task("dead", run_id=one.id, lease_seconds=-1, versions=["1@aaa"])
    assert dead is not None and dead.input == 1
    assert await store.claim_task("w2", run_id=one.id, versions=["2@bbb"]) is None
    assert await store.claim_tasks("w2", capacity={"a": 9}, limit=9, run_id=one.id,
                                   versions=["2@bbb"]) == []
    across = await store.claim_tasks("w2", capacity={"a": 9}, limit=9, versions=["2@bbb"])
    assert [(t.run_id, t.input) for t in across] == [(old.id, 0)]  # a run with none: any
    assert [t.status for t in await store.list_tasks(one.id)] == ["running", "pending"]
    taken = await store.claim_task("w1", run_id=one.id, versions=["2@bbb", "1@aaa"])
    assert taken is not None and (taken.id, taken.attempt) == (dead.id, 2)  # taken over
    rest = await store.claim_tasks("any", capacity={"a": 9}, limit=9)  # no filter
    assert [(t.run_id, t.input) for t in rest] == [(one.id, 2)]


@pytest.mark.parametrize("claimed_with", [None, ("1@aaa",)], ids=["any", "v1"])
@pytest.mark.parametrize("hand_in", [("2@bbb",), ("1@aaa",), None], ids=["v2", "v1", "any"])
async def test_a_hand_in_claims_only_tasks_of_runs_on_its_versions(
        store: Blackboard, claimed_with: tuple[str, ...] | None,
        hand_in: tuple[str, ...] | None) -> None:
    """Complete-and-claim on a v1 run: a claimer serving v2 takes neither the run's older
    pending task nor the task its own handoff makes (both stay pending); one serving v1,
    or with no filter, takes them, whatever versions it claimed the finished task under."""
    run = await store.create_run("p", {}, tasks=[NewTask("a", 1), NewTask("a", 2)],
                                 version="1@aaa")
    takes = hand_in != ("2@bbb",)
    for handoff in (False, True):  # first the older pending task, then the handoff's
        task = await store.claim_task("w", run_id=run.id, versions=claimed_with)
        assert task is not None
        writes = Writes(handoffs=[NewHandoff("b", {"from": task.id})]) if handoff else None
        step = StepResult(task.id, 0, 1, "model", "m", "d", {"text": "ok"})
        nxt = await store.complete_task(
            task.id, Lease("w", task.attempt), "ok", agent_id=f"{run.id}/a", writes=writes,
            step=step, claim=ClaimSpec("w", {"a": 1, "b": 1}, 1, run.id, 30.0, hand_in))
        pending = [t for t in await store.list_tasks(run.id, status="pending")
                   if t.id != task.id]
        if takes:
            assert [(t.role, t.lease_owner) for t in nxt] == [("b" if handoff else "a", "w")]
            assert pending == []
            await store.release_leases(run.id, owners=["w"])  # the next round claims it
        else:
            assert nxt == [] and [t.role for t in pending] == ["b" if handoff else "a"]
