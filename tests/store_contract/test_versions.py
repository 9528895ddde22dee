"""Runs' versions, the same on every backend: recorded at creation, kept by a fork, named
by a worker's look (which finds no run of another version), and moved only on purpose."""

from __future__ import annotations

import pytest

from orchestra._errors import UserError
from orchestra.store import Blackboard, NewTask


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
