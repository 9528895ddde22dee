"""Board and Approvals: plans, handoffs with their tasks, note search, human decisions."""

from __future__ import annotations

import pytest
from backends import Claimed

from orchestra._errors import UserError
from orchestra.store import (
    Blackboard,
    Lease,
    NewHandoff,
    NewNote,
    Writes,
)


async def test_plans_are_versioned(store: Blackboard) -> None:
    run = await store.create_run("p", {})
    assert await store.latest_plan(run.id) is None
    await store.post_plan(run.id, "arch", {"v": 1})
    await store.post_plan(run.id, "arch", {"v": 2})
    assert [(p.version, p.body) for p in await store.get_plans(run.id)] == [(1, {"v": 1}),
                                                                             (2, {"v": 2})]
    latest = await store.latest_plan(run.id)
    assert latest is not None and latest.body == {"v": 2}


async def test_a_handoff_commits_with_its_task_and_its_key_is_idempotent(
        store: Blackboard, claimed: Claimed) -> None:
    run, task, lease = await claimed("architect")
    agent = f"{run.id}/architect"
    await store.complete_task(task.id, lease, {"ok": 1}, agent_id=agent,
                              writes=Writes(handoffs=[NewHandoff("coder", {"m": "a"}, note="go",
                                                                 key="h")]))
    [handoff] = await store.get_handoffs(run.id)
    child = await store.get_task(handoff.task_id)
    assert (handoff.from_agent, handoff.to_role, handoff.payload, handoff.note) == (
        agent, "coder", {"m": "a"}, "go")
    assert (child.role, child.input, child.status, child.parent_id) == (
        "coder", {"m": "a"}, "pending", task.id)
    again = await store.post_handoff(run.id, agent, NewHandoff("coder", {"m": "b"}, key="h"))
    assert again.id == handoff.id and again.task_id == child.id
    assert len(await store.list_tasks(run.id, role="coder")) == 1
    assert await store.get_handoffs(run.id, to_role="reviewer") == []
    assert len(await store.get_handoffs(run.id, from_agent=agent)) == 1


async def test_bad_writes_in_a_bundle_write_nothing(store: Blackboard, claimed: Claimed) -> None:
    run, task, lease = await claimed("architect")
    agent = f"{run.id}/architect"
    events = await store.events(run.id)
    with pytest.raises(UserError, match="handoff payload to 'coder'"):
        await store.complete_task(task.id, lease, {"ok": 1}, agent_id=agent,
                                  writes=Writes(notes=[NewNote("kept?")],
                                                handoffs=[NewHandoff("coder", {1j})]))
    assert await store.get_handoffs(run.id) == []
    assert await store.search_notes(run.id) == []
    assert await store.events(run.id) == events
    assert (await store.get_task(task.id)).status == "running"


async def test_notes_search_by_text_author_and_tag(store: Blackboard) -> None:
    run = await store.create_run("p", {})
    other = await store.create_run("p", {})
    await store.post_note(run.id, "arch", NewNote("We chose SQLite: it is embedded",
                                                  ("decision",)))
    await store.post_note(run.id, "coder", NewNote("SQLite WAL: SQLite readers never block",
                                                   ("fact",)))
    await store.post_note(other.id, "arch", NewNote("SQLite elsewhere", ("decision",)))
    ranked = await store.search_notes(run.id, text="sqlite")
    assert [n.author for n in ranked] == ["coder", "arch"]
    assert ranked[0].rank is not None and ranked[1].rank is not None
    assert ranked[0].rank > ranked[1].rank  # higher is more relevant, in every backend
    assert [n.author for n in await store.search_notes(run.id, text="wal readers")] == ["coder"]
    assert [n.body for n in await store.search_notes(tag="decision", author="arch")] == [
        "SQLite elsewhere", "We chose SQLite: it is embedded"]  # newest first without text
    for weird in ('"', "AND", "NEAR(", "-", "*", "a OR", "()"):
        await store.search_notes(run.id, text=weird)  # user text never raises


async def test_an_approval_parks_the_task_and_a_decision_requeues_it(
        store: Blackboard, claimed: Claimed) -> None:
    run, task, lease = await claimed()
    approval = await store.request_approval(task.id, lease, retry=0, step=2, tool="deploy",
                                            arguments={"to": "prod"})
    assert (approval.status, approval.tool, approval.arguments) == ("pending", "deploy",
                                                                    {"to": "prod"})
    assert (await store.get_task(task.id)).status == "waiting"
    assert await store.claim_task("w2", run_id=run.id) is None
    assert [a.id for a in await store.list_approvals(run.id, status="pending")] == [approval.id]
    decided = await store.decide_approval(approval.id, approved=True, by="me", reason="ok")
    assert (decided.status, decided.decided_by, decided.reason) == ("approved", "me", "ok")
    with pytest.raises(UserError, match="already approved"):
        await store.decide_approval(approval.id, approved=False, by="you")
    again = await store.claim_task("w2", run_id=run.id)
    assert again is not None and again.id == task.id
    found = await store.find_approval(task.id, 0, 2)
    assert found == await store.get_approval(approval.id) and found.status == "approved"
    # asking again for the decided step returns the decision and leaves the task running
    same = await store.request_approval(task.id, Lease("w2", again.attempt), retry=0, step=2,
                                        tool="deploy", arguments={"to": "prod"})
    assert same.status == "approved" and (await store.get_task(task.id)).status == "running"


async def test_a_cancelled_runs_approval_cannot_be_decided(store: Blackboard,
                                                           claimed: Claimed) -> None:
    run, task, lease = await claimed()
    approval = await store.request_approval(task.id, lease, retry=0, step=1, tool="deploy",
                                            arguments={})
    await store.set_run_status(run.id, "cancelled")
    with pytest.raises(UserError, match="which was cancelled"):
        await store.decide_approval(approval.id, approved=True, by="me")
    assert (await store.get_approval(approval.id)).status == "pending"
    assert (await store.get_task(task.id)).status == "cancelled"
