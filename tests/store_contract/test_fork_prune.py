"""RunStore.fork_run and Retention: a fork is the run as it was right after an event;
a prune deletes finished runs completely and leaves everything else alone."""

from __future__ import annotations

import time

import pytest

from orchestra._entries import Scope
from orchestra._errors import NotFoundError, UserError
from orchestra._types import Event, Message, Run
from orchestra.store import (
    Blackboard,
    Lease,
    NewHandoff,
    NewNote,
    NewTask,
    StepResult,
    Writes,
)


async def two_task_run(store: Blackboard) -> Run:
    """architect: a step, then ends with a plan, a note and a handoff; coder: a step, then
    asks for an approval (the run is left waiting on it)."""
    run = await store.create_run("p", {"goal": "g"}, tasks=[NewTask("architect", {"s": 1})])
    arch = await store.claim_task("w", run_id=run.id)
    assert arch is not None
    lease, agent = Lease("w", arch.attempt), f"{run.id}/architect"
    await store.complete_step(StepResult(arch.id, 0, 1, "model", "model", "d", {"text": "t1"}),
                              lease, agent_id=agent,
                              writes=Writes(messages=[Message("user", "spec"),
                                                      Message("assistant", "t1")]))
    await store.complete_task(arch.id, lease, {"plan": 1}, agent_id=agent, writes=Writes(
        messages=[Message("assistant", "done")], plans=[{"modules": ["a"]}],
        notes=[NewNote("chose sqlite", scope=Scope.roles("coder"))],
        handoffs=[NewHandoff("coder", {"m": "a"})]))
    coder = await store.claim_task("w", run_id=run.id)
    assert coder is not None
    clease, cagent = Lease("w", coder.attempt), f"{run.id}/coder"
    await store.complete_step(StepResult(coder.id, 0, 1, "tool", "write", "d", {"ok": 1},
                                         tokens_in=5), clease, agent_id=cagent,
                              writes=Writes(messages=[Message("tool", "wrote a.py")]))
    await store.request_approval(coder.id, clease, retry=0, step=2, tool="deploy", arguments={})
    return await store.get_run(run.id)


def seq_of(events: list[Event], kind: str, nth: int = 0) -> int:
    return [e.seq for e in events if e.kind == kind][nth]


async def snapshot(store: Blackboard, run: Run) -> tuple[object, ...]:
    tasks = await store.list_tasks(run.id)
    return (await store.get_run(run.id), tasks, await store.events(run.id, limit=10_000),
            [await store.get_steps(t.id, 0) for t in tasks],
            await store.get_messages(f"{run.id}/architect"),
            await store.get_messages(f"{run.id}/coder"), await store.search_notes(run.id),
            await store.get_plans(run.id), await store.list_approvals(run.id))


async def test_a_fork_holds_the_state_right_after_its_event(store: Blackboard) -> None:
    run = await two_task_run(store)
    events = await store.events(run.id)
    before = await snapshot(store, run)

    # right after the architect's first step: one task, running -> pending, one step kept
    fork = await store.fork_run(run.id, seq_of(events, "step.completed"))
    assert fork.status == "pending" and fork.pipeline == "p" and fork.input == {"goal": "g"}
    [task] = await store.list_tasks(fork.id)
    assert (task.role, task.status, task.lease_owner) == ("architect", "pending", None)
    assert [s.step for s in await store.get_steps(task.id, 0)] == [1]
    assert [m.content for m in await store.get_messages(f"{fork.id}/architect")] == ["spec",
                                                                                   "t1"]
    assert await store.get_plans(fork.id) == [] and await store.search_notes(fork.id) == []
    forked = await store.events(fork.id)
    assert [e.seq for e in forked] == list(range(1, len(forked) + 1))
    assert forked[-1].kind == "run.forked" and forked[-1].data["from"] == run.id
    assert [e.kind for e in forked[:-1]] == [e.kind for e in events[:len(forked) - 1]]
    assert forked[-2].data["task"] == task.id  # event data names the fork's own tasks

    # right after the architect's end: it is completed with its result; the coder pending
    fork2 = await store.fork_run(run.id, seq_of(events, "task.completed"), fork_id="f2",
                                 input={"goal": "g", "model": "other"})
    assert fork2.id == "f2" and fork2.input == {"goal": "g", "model": "other"}
    arch, coder = await store.list_tasks("f2")
    assert (arch.status, arch.result, coder.status, coder.input) == (
        "completed", {"plan": 1}, "pending", {"m": "a"})
    assert coder.parent_id == arch.id
    [handoff] = await store.get_handoffs("f2")
    assert (handoff.task_id, handoff.from_agent) == (coder.id, "f2/architect")
    [note] = await store.search_notes("f2", text="sqlite")
    assert (note.body, note.author, note.scope) == ("chose sqlite", "f2/architect",
                                                    Scope.roles("coder"))  # scope kept
    assert len(await store.get_plans("f2")) == 1
    assert await store.get_messages("f2/coder") == []

    # at the end: the coder waits on its (still pending) approval, as in the source
    fork3 = await store.fork_run(run.id, run.last_seq)
    coder3 = (await store.list_tasks(fork3.id, role="coder"))[0]
    assert coder3.status == "waiting"
    [approval] = await store.list_approvals(fork3.id)
    assert (approval.task_id, approval.status) == (coder3.id, "pending")
    assert (await store.get_run(fork3.id)).tokens_in == 5
    assert await store.step_counts(fork3.id) == await store.step_counts(run.id)

    assert await snapshot(store, run) == before  # the source is untouched
    for bad in (0, run.last_seq + 1):
        with pytest.raises(UserError, match="not one of them"):
            await store.fork_run(run.id, bad)
    with pytest.raises(UserError, match="already exists"):
        await store.fork_run(run.id, 1, fork_id="f2")
    with pytest.raises(NotFoundError):
        await store.fork_run("nope", 1)


async def test_a_fork_at_an_event_mid_write_takes_the_whole_write(store: Blackboard) -> None:
    run = await two_task_run(store)
    events = await store.events(run.id)
    # the architect's end wrote plan, note, handoff and completion in one write
    fork = await store.fork_run(run.id, seq_of(events, "plan.posted"))
    assert [t.status for t in await store.list_tasks(fork.id)] == ["completed", "pending"]


async def finished_run(store: Blackboard, status: str = "completed") -> Run:
    run = await store.create_run("p", {}, tasks=[NewTask("a", {})])
    task = await store.claim_task("w", run_id=run.id)
    assert task is not None
    await store.complete_task(task.id, Lease("w", task.attempt), {"r": 1},
                              agent_id=f"{run.id}/a",
                              writes=Writes(messages=[Message("user", "q"),
                                                      Message("assistant", "a")],
                                            notes=[NewNote(f"zebra {run.id}")],
                                            handoffs=[NewHandoff("b", {})]))
    await store.set_run_status(run.id, "cancelled" if status == "cancelled" else status)
    return await store.get_run(run.id)


async def gone(store: Blackboard, run: Run) -> bool:
    with pytest.raises(NotFoundError):
        await store.get_run(run.id)
    with pytest.raises(NotFoundError):
        await store.events(run.id)
    return (await store.get_messages(f"{run.id}/a") == []
            and all(n.run_id != run.id for n in await store.search_notes(text="zebra")))


async def test_prune_deletes_finished_runs_completely_and_nothing_else(store: Blackboard) -> None:
    old = [await finished_run(store, s) for s in ("completed", "failed", "cancelled")]
    live = await store.create_run("p", {}, tasks=[NewTask("a", {})])
    await store.post_note(live.id, "x", NewNote("zebra live"))
    newest = await finished_run(store)
    live_before = (await store.get_run(live.id), await store.events(live.id))
    pruned = await store.prune_runs(keep=1, batch_rows=3)  # small batches: ranges too
    assert sorted(pruned.runs) == sorted(r.id for r in old) and pruned.rows > 0
    for run in old:
        assert await gone(store, run)
    assert (await store.get_run(live.id), await store.events(live.id)) == live_before
    assert (await store.get_run(newest.id)).status == "completed"
    assert {n.run_id for n in await store.search_notes(text="zebra")} == {live.id, newest.id}
    assert (await store.prune_runs(finished_before=time.time() + 60, vacuum=True)).runs == [
        newest.id]
    assert [r.id for r in await store.list_runs()] == [live.id]
    assert (await store.prune_runs(finished_before=0)).runs == []
    with pytest.raises(UserError, match="--finished-before DATE or --keep N"):
        await store.prune_runs()


async def streamed_run(store: Blackboard, *, finish: bool = True) -> tuple[Run, dict[str, int]]:
    """A run whose calls streamed their answers (``model.delta``): task a's step 1
    completes; its step 2 is cut by a dead worker, re-issued by the next claim and
    completes; task b's call fails. Returns the run and each call's first delta's seq."""
    run = await store.create_run("p", {}, tasks=[NewTask("a", {}), NewTask("b", {})])
    first: dict[str, int] = {}

    async def stream(name: str, task: str, step: int, attempt: int, n: int) -> None:
        for i in range(n):
            e = await store.append_event(run.id, "model.delta", {
                "task": task, "agent": f"{run.id}/x", "role": "x", "step": step, "retry": 0,
                "attempt": attempt, "text": f"{name}{i} ", **({"first": True} if not i else {})})
            first.setdefault(name, e.seq)

    a = await store.claim_task("w1", run_id=run.id, roles=["a"], lease_seconds=-1)
    assert a is not None
    lease, agent = Lease("w1", a.attempt), f"{run.id}/a"
    await stream("a1", a.id, 1, 1, 3)
    await store.complete_step(StepResult(a.id, 0, 1, "model", "m", "d", {"text": "a1"}),
                              lease, agent_id=agent)
    await store.complete_step(StepResult(a.id, 0, 2, "tool", "t", "d", {"ok": 1}), lease,
                              agent_id=agent)
    await stream("cut", a.id, 3, 1, 2)  # w1 dies mid-answer: its lease runs out
    (again,) = await store.claim_tasks("w2", capacity={"a": 1}, limit=1, run_id=run.id)
    lease = Lease("w2", again.attempt)
    await stream("a3", a.id, 3, again.attempt, 2)
    await store.complete_task(a.id, lease, {"r": 1}, agent_id=agent, step=StepResult(
        a.id, 0, 3, "model", "m", "d", {"text": "a3"}))
    b = await store.claim_task("w1", run_id=run.id, roles=["b"])
    assert b is not None
    await stream("b1", b.id, 1, 1, 2)
    await store.complete_step(StepResult(b.id, 0, 1, "model", "m", "d", error="boom"),
                              Lease("w1", b.attempt), agent_id=f"{run.id}/b")
    if finish:
        await store.set_run_status(run.id, "failed", error="b failed")
    return await store.get_run(run.id), first


def texts(events: list[Event]) -> list[str]:
    return [e.data["text"] for e in events if e.kind == "model.delta"]


async def test_prune_folds_a_completed_calls_deltas_and_keeps_an_interrupted_ones(
        store: Blackboard) -> None:
    """A finished run that prune keeps loses the deltas of each call that completed its
    step (the step holds the answer); the text of a call cut by a dead worker and of a
    failed call stays. A reader resuming from a cursor inside the folded deltas goes on
    with the next event still stored, and misses none of them."""
    run, first = await streamed_run(store)
    live, _ = await streamed_run(store, finish=False)
    before = await store.events(run.id, limit=10_000)
    live_before = await store.events(live.id, limit=10_000)
    pruned = await store.prune_runs(keep=5, batch_rows=2)  # small writes: chunks too
    assert pruned.runs == [] and pruned.folded == 5
    after = await store.events(run.id, limit=10_000)
    assert texts(after) == ["cut0 ", "cut1 ", "b10 ", "b11 "]
    assert after == [e for e in before if e.kind != "model.delta"
                     or not e.data["text"].startswith(("a1", "a3"))]
    assert (await store.get_run(run.id)).last_seq == run.last_seq  # new events count on
    for cursor in range(run.last_seq + 1):  # from anywhere, into the holes too
        rest = await store.events(run.id, starting_after=cursor, limit=10_000)
        assert rest == [e for e in after if e.seq > cursor]
    assert (await store.events(run.id, starting_after=first["a3"], limit=1))[0].kind == \
        "step.completed"
    fork = await store.fork_run(run.id, first["a1"] + 1)  # at a folded delta: the event before
    assert [e.kind for e in await store.events(fork.id)][-2:] == ["task.claimed", "run.forked"]
    assert await store.events(live.id, limit=10_000) == live_before  # a live run is kept whole
    assert (await store.prune_runs(keep=5)).folded == 0  # nothing left to fold
    assert (await store.prune_runs(finished_before=time.time() + 60, fold=False)).folded == 0
    assert len(await store.events(live.id, limit=10_000)) == len(live_before)


async def test_prune_before_a_date_folds_runs_untouched_since_whatever_their_status(
        store: Blackboard) -> None:
    live, _ = await streamed_run(store, finish=False)
    assert live.status not in ("completed", "failed", "cancelled")
    assert (await store.prune_runs(finished_before=0)).folded == 0
    pruned = await store.prune_runs(finished_before=time.time() + 60, keep=5)
    assert pruned.runs == [] and pruned.folded == 5
    assert texts(await store.events(live.id, limit=10_000)) == ["cut0 ", "cut1 ", "b10 ",
                                                                "b11 "]
    assert (await store.get_run(live.id)).status == live.status
