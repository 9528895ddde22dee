"""RunStore: runs, their status changes, deletion, and reads of their tasks."""

from __future__ import annotations

import pytest
from backends import Claimed

from orchestra._errors import LeaseLostError, NotFoundError, UserError
from orchestra.store import Blackboard, NewNote, NewTask


async def test_a_run_round_trips_and_changes_status(store: Blackboard) -> None:
    run = await store.create_run("pipe", {"goal": "g"}, run_id="r1",
                                 tasks=[NewTask("a", {"i": 1}), NewTask("b", [1, 2])])
    assert (run.id, run.pipeline, run.input, run.status) == ("r1", "pipe", {"goal": "g"}, "pending")
    assert await store.get_run("r1") == run
    assert [t.role for t in await store.list_tasks("r1")] == ["a", "b"]
    assert await store.task_counts("r1") == {"pending": 2}
    running = await store.set_run_status("r1", "running", only_from=("pending",))
    assert running.status == "running"
    with pytest.raises(UserError, match="is running"):
        await store.set_run_status("r1", "running", only_from=("pending",))
    with pytest.raises(UserError, match="already exists"):
        await store.create_run("pipe", {}, run_id="r1")
    failed = await store.set_run_status("r1", "failed", error="why")
    assert (failed.status, failed.error) == ("failed", "why")
    assert [r.id for r in await store.list_runs(active_only=True)] == []
    assert [r.id for r in await store.list_runs()] == ["r1"]


async def test_a_status_change_and_its_note_commit_together(store: Blackboard) -> None:
    """How the board stalls a run: both or neither, so a resume that decides again after a
    kill between them cannot post the note twice."""
    await store.create_run("pipe", {}, run_id="r1")
    note = NewNote("stalled: no entry", ("stalled",))
    with pytest.raises(UserError, match="is pending"):
        await store.set_run_status_noting("r1", "stalled", note, author="orchestra",
                                          error="why", only_from=("running",))
    assert await store.search_notes("r1") == []
    stalled = await store.set_run_status_noting("r1", "stalled", note, author="orchestra",
                                                error="why", only_from=("pending",))
    assert (stalled.status, stalled.error) == ("stalled", "why")
    [posted] = await store.search_notes("r1")
    assert (posted.author, posted.body, posted.tags) == ("orchestra", note.body, note.tags)
    kinds = [e.kind for e in await store.events("r1")]
    assert kinds[-2:] == ["run.stalled", "note.posted"]


async def test_a_paused_run_keeps_its_pending_tasks_and_is_claimed_by_nobody(
        store: Blackboard) -> None:
    """A cap's stop: the run is paused (a status of runs only), nobody serves it until a
    resume sets it running again."""
    await store.create_run("pipe", {}, run_id="r1", tasks=[NewTask("a", {})])
    paused = await store.set_run_status("r1", "paused", error="cap")
    assert (paused.status, paused.reason, paused.error) == ("paused", "budget", "cap")
    assert await store.list_runs(active_only=True) == []
    assert [r.id for r in await store.list_runs(status="paused")] == ["r1"]
    assert await store.claim_task("w1") is None
    assert await store.task_counts("r1") == {"pending": 1}
    assert (await store.set_run_status("r1", "running", only_from=("paused",))).reason is None
    assert (await store.claim_task("w1")) is not None


async def test_cancelling_a_run_cancels_and_fences_its_live_tasks(store: Blackboard,
                                                                claimed: Claimed) -> None:
    run, task, lease = await claimed()
    await store.add_tasks(run.id, [NewTask("later", {})])
    await store.set_run_status(run.id, "cancelled")
    assert await store.task_counts(run.id) == {"cancelled": 2}
    with pytest.raises(LeaseLostError):
        await store.complete_task(task.id, lease, {}, agent_id=f"{run.id}/coder")
    assert await store.claim_task("w2") is None


async def test_delete_removes_a_finished_run_and_refuses_a_live_one(store: Blackboard,
                                                                  claimed: Claimed) -> None:
    run, task, lease = await claimed()
    with pytest.raises(UserError, match="cancel it first"):
        await store.delete_run(run.id)
    await store.complete_task(task.id, lease, {"ok": 1}, agent_id=f"{run.id}/coder")
    await store.set_run_status(run.id, "completed")
    await store.delete_run(run.id)
    with pytest.raises(NotFoundError):
        await store.get_run(run.id)
    with pytest.raises(NotFoundError):
        await store.get_task(task.id)
    assert await store.list_runs() == []


async def test_unknown_ids_raise_not_found(store: Blackboard) -> None:
    for call in (store.get_run("nope"), store.list_tasks("nope"), store.task_counts("nope"),
                 store.get_task("nope"), store.events("nope"), store.get_plans("nope"),
                 store.get_approval("nope"), store.step_counts("nope"),
                 store.add_tasks("nope", [NewTask("a", {})]),
                 store.append_event("nope", "x", {}), store.set_run_status("nope", "failed")):
        with pytest.raises(NotFoundError):
            await call


async def test_runs_are_listed_newest_first_in_keyset_pages_with_filters(
        store: Blackboard) -> None:
    for i in range(5):
        await store.create_run("even" if i % 2 == 0 else "odd", {}, run_id=f"r{i}")
    await store.set_run_status("r4", "completed")
    everything = await store.list_runs()
    assert [r.id for r in everything] == ["r4", "r3", "r2", "r1", "r0"]
    pages, before = [], None
    while True:
        page = await store.list_runs(limit=2, before=before)
        pages.append([r.id for r in page])
        if len(page) < 2:
            break
        before = (page[-1].created_at, page[-1].id)
    assert pages == [["r4", "r3"], ["r2", "r1"], ["r0"]]
    assert [r.id for r in await store.list_runs(pipeline="even")] == ["r4", "r2", "r0"]
    assert [r.id for r in await store.list_runs(pipeline="even", active_only=True)] == [
        "r2", "r0"]
    assert [r.id for r in await store.list_runs(status="completed")] == ["r4"]


async def test_run_statuses_reads_many_runs_at_once(store: Blackboard) -> None:
    """What a driver watching many runs for a cancel reads: existing runs only."""
    a = await store.create_run("p", {})
    b = await store.create_run("p", {})
    await store.set_run_status(b.id, "cancelled")
    assert await store.run_statuses([a.id, b.id, "no-such-run"]) == {
        a.id: "pending", b.id: "cancelled"}
    assert await store.run_statuses([]) == {}
