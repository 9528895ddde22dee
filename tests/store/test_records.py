"""Every record kind round-trips through the store, with its event."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from store_helpers import Claim, query

from orchestra._errors import NotFoundError, StoreError, UserError
from orchestra._types import CompactionRecord, Message, ToolCallRecord
from orchestra.store import (
    Lease,
    NewHandoff,
    NewNote,
    NewTask,
    SQLiteBlackboard,
    StepResult,
    Writes,
)


async def kinds(store: SQLiteBlackboard, run_id: str) -> list[str]:
    return [e.kind for e in await store.events(run_id)]


async def test_run_round_trip_and_status(store: SQLiteBlackboard) -> None:
    run = await store.create_run("software", {"goal": "a CLI"}, run_id="r1",
                                 tasks=[NewTask("architect", {"x": 1})])
    assert (run.id, run.pipeline, run.input, run.status) == ("r1", "software", {"goal": "a CLI"},
                                                             "pending")
    assert await store.get_run("r1") == run
    running = await store.set_run_status("r1", "running", only_from=["pending"])
    assert running.status == "running"
    with pytest.raises(UserError, match="run r1 is running"):
        await store.set_run_status("r1", "running", only_from=["pending"])
    assert [r.id for r in await store.list_runs(active_only=True)] == ["r1"]
    await store.set_run_status("r1", "failed", error="boom")
    assert (await store.get_run("r1")).error == "boom"
    assert await store.list_runs(active_only=True) == []
    assert await kinds(store, "r1") == ["run.created", "task.created", "run.running",
                                        "run.failed"]
    with pytest.raises(UserError, match="already exists"):
        await store.create_run("software", {}, run_id="r1")
    generated = await store.create_run("software", None)
    assert len(generated.id) == 12


async def test_tasks_round_trip_and_keys_are_idempotent(store: SQLiteBlackboard) -> None:
    run = await store.create_run("p", {})
    first = await store.add_tasks(run.id, [NewTask("coder", {"m": 1}, key="mod1", max_attempts=5),
                                           NewTask("reviewer", [1, 2])])
    again = await store.add_tasks(run.id, [NewTask("coder", {"m": "other"}, key="mod1")])
    assert again[0] == first[0]
    assert await store.get_task(first[0].id) == first[0]
    assert [t.role for t in await store.list_tasks(run.id)] == ["coder", "reviewer"]
    assert [t.role for t in await store.list_tasks(run.id, role="reviewer")] == ["reviewer"]
    assert await store.list_tasks(run.id, status="running") == []
    assert await store.task_counts(run.id) == {"pending": 2}
    assert (await kinds(store, run.id)).count("task.created") == 2


async def test_plans_are_versioned(store: SQLiteBlackboard) -> None:
    run = await store.create_run("p", {})
    assert await store.latest_plan(run.id) is None
    await store.post_plan(run.id, "architect", {"modules": ["a"]})
    second = await store.post_plan(run.id, "architect", {"modules": ["a", "b"]})
    assert second.version == 2
    assert await store.latest_plan(run.id) == second
    assert [p.body for p in await store.get_plans(run.id)] == [{"modules": ["a"]},
                                                               {"modules": ["a", "b"]}]


async def test_handoff_creates_its_task(store: SQLiteBlackboard, claimed: Claim) -> None:
    run, task, lease = await claimed("architect")
    agent = f"{run.id}/architect"
    handoff = await store.post_handoff(run.id, agent, NewHandoff("coder", {"module": "a"},
                                                                 "start here", key="a"))
    created = await store.get_task(handoff.task_id)
    assert (created.role, created.input, created.cause) == ("coder", {"module": "a"},
                                                            f"handoff:{handoff.id}")
    assert await store.get_handoffs(run.id, to_role="coder") == [handoff]
    assert await store.get_handoffs(run.id, from_agent="nobody") == []
    again = await store.post_handoff(run.id, agent, NewHandoff("coder", {"module": "z"}, key="a"))
    assert again == handoff
    # Handoffs inside a task's writes get the task as parent.
    await store.complete_task(task.id, lease, {"ok": True}, agent_id=agent,
                              writes=Writes(handoffs=[NewHandoff("reviewer", {"m": "a"})]))
    [review] = await store.list_tasks(run.id, role="reviewer")
    assert review.parent_id == task.id
    assert (await kinds(store, run.id)).count("handoff.posted") == 2


async def test_a_handoff_payload_that_is_not_json_is_refused_by_name(
        store: SQLiteBlackboard, claimed: Claim) -> None:
    run, task, lease = await claimed("architect")
    agent = f"{run.id}/architect"
    with pytest.raises(UserError, match="handoff payload to 'coder' is not JSON-serializable"):
        await store.post_handoff(run.id, agent, NewHandoff("coder", {"when": object()}))
    with pytest.raises(UserError, match="handoff payload to 'coder'"):
        await store.complete_task(task.id, lease, {"ok": True}, agent_id=agent,
                                  writes=Writes(handoffs=[NewHandoff("coder", {1j})]))
    # nothing was written, and the task can still be completed
    assert await store.get_handoffs(run.id) == []
    assert [t.role for t in await store.list_tasks(run.id)] == ["architect"]
    await store.complete_task(task.id, lease, {"ok": True}, agent_id=agent)
    assert (await store.get_task(task.id)).status == "completed"


async def test_notes_full_text_search(store: SQLiteBlackboard) -> None:
    run = await store.create_run("p", {})
    other = await store.create_run("p", {})
    await store.post_note(run.id, "arch", NewNote("We chose SQLite because it is embedded",
                                                  ("decision", "storage")))
    await store.post_note(run.id, "coder", NewNote("SQLite WAL mode: readers do not block; "
                                                   "SQLite checkpoints the WAL", ("fact",)))
    await store.post_note(other.id, "arch", NewNote("Postgres later", ("decision",)))
    hits = await store.search_notes(run.id, text="sqlite wal")
    assert [n.author for n in hits] == ["coder"]
    assert hits[0].rank is not None
    ranked = await store.search_notes(run.id, text="SQLite")
    assert [n.author for n in ranked] == ["coder", "arch"]  # bm25: more mentions rank first
    assert ranked[0].rank is not None and ranked[1].rank is not None
    assert ranked[0].rank > ranked[1].rank
    assert [n.body for n in await store.search_notes(tag="decision")] == [
        "Postgres later", "We chose SQLite because it is embedded"]
    assert [n.run_id for n in await store.search_notes(tag="decision", author="arch",
                                                       run_id=run.id)] == [run.id]
    assert [n.tags for n in await store.search_notes(run.id, text="storage")] == [
        ("decision", "storage")]


@pytest.mark.parametrize("text", [
    '"', "'", "AND", "OR NOT", "NEAR(a b)", "-", "*", "a*", "-sqlite", "col:x", "(", ")",
    '"unterminated', "^", "+", "{a b}", "", "   ", "sqlite AND OR", "NOT sqlite", "✓ ünïcode",
    "\x00", "a\nb", "%_\\",
])
async def test_weird_search_strings_never_raise(store: SQLiteBlackboard, text: str) -> None:
    run = await store.create_run("p", {})
    await store.post_note(run.id, "a", NewNote("sqlite and postgres"))
    await store.search_notes(run.id, text=text)
    await store.search_messages(f"{run.id}/a", text)


async def test_messages_are_appended_with_store_assigned_seq(store: SQLiteBlackboard,
                                                             claimed: Claim) -> None:
    run, task, lease = await claimed()
    agent = f"{run.id}/coder"
    call = ToolCallRecord("c1", "read_file", '{"path": "a.py"}')
    result = StepResult(task.id, 0, 1, "model", "m", "d", output={"text": "hi"})
    await store.complete_step(result, lease, agent_id=agent, writes=Writes(messages=[
        Message("user", "Fix the Parser bug", agent_id="ignored", seq=99),
        Message("assistant", "", tool_calls=(call,)),
        Message("tool", "def parse(): ...", tool_call_id="c1", name="read_file"),
    ]))
    messages = await store.get_messages(agent)
    assert [(m.seq, m.agent_id, m.task_id) for m in messages] == [
        (1, agent, task.id), (2, agent, task.id), (3, agent, task.id)]
    assert messages[1].tool_calls == (call,)
    assert (messages[2].tool_call_id, messages[2].name) == ("c1", "read_file")
    assert [m.seq for m in await store.get_messages(agent, after_seq=1, limit=1)] == [2]
    found = await store.search_messages(agent, "parser BUG missing")
    assert [m.seq for m in found] == [1]
    assert [m.seq for m in await store.search_messages(agent, "parse")] == [3, 1]
    assert await store.get_messages("nobody/none") == []


async def test_compactions_round_trip(store: SQLiteBlackboard, claimed: Claim) -> None:
    run, task, lease = await claimed()
    agent = f"{run.id}/coder"
    record = CompactionRecord("ignored", 1, 10, "summary of 1..10", step=4)
    result = StepResult(task.id, 0, 4, "compaction", "summarize", "d", output="summary")
    await store.complete_step(result, lease, agent_id=agent, writes=Writes(compactions=[record]))
    [stored] = await store.get_compactions(agent)
    assert (stored.agent_id, stored.first_seq, stored.last_seq, stored.summary, stored.task_id,
            stored.step) == (agent, 1, 10, "summary of 1..10", task.id, 4)


async def test_step_journal(store: SQLiteBlackboard, claimed: Claim) -> None:
    run, task, lease = await claimed()
    agent = f"{run.id}/coder"
    await store.start_step(task.id, 0, 1, "model", "gpt", "d1", lease)
    await store.start_step(task.id, 0, 1, "model", "gpt", "d1", lease)  # a crash reissued it
    result = StepResult(task.id, 0, 1, "model", "gpt", "d1", output={"a": 1}, tokens_in=10,
                        tokens_out=5, cost=0.5)
    await store.complete_step(result, lease, agent_id=agent)
    # complete_step without start_step inserts the row.
    await store.complete_step(StepResult(task.id, 0, 2, "tool", "run", "d2", error="exit 1"),
                              lease, agent_id=agent)
    steps = await store.get_steps(task.id, 0)
    assert [(s.step, s.status, s.attempts, s.output, s.error) for s in steps] == [
        (1, "completed", 2, {"a": 1}, None), (2, "failed", 1, None, "exit 1")]
    with pytest.raises(StoreError, match="already completed"):
        await store.complete_step(result, lease, agent_id=agent)
    await store.start_step(task.id, 0, 1, "model", "gpt", "d1", lease)  # completed: left alone
    assert (await store.get_steps(task.id, 0))[0].attempts == 2
    assert await store.get_steps(task.id, 1) == []
    # a start arriving after the step failed (a deferred model start) changes nothing
    await store.start_step(task.id, 0, 2, "tool", "run", "d2", lease)
    assert (await store.get_steps(task.id, 0))[1].status == "failed"
    assert await store.step_counts(run.id) == {"completed": 1, "failed": 1, "started": 0,
                                               "cancelled": 0, "reissued": 1, "retried": 0}
    totals = await store.get_run(run.id)
    assert (totals.tokens_in, totals.tokens_out, totals.cost, totals.steps) == (10, 5, 0.5, 2)
    [info] = await store.agent_infos(run.id)
    assert (info.agent_id, info.role, info.steps_completed, info.steps_reissued,
            info.tokens_in, info.tokens_out, info.messages) == (agent, "coder", 1, 1, 10, 5, 0)
    assert info.restart_point == {"task": task.id, "retry": 0, "step": 1}
    events = [e for e in await store.events(run.id) if e.kind.startswith("step.")]
    # model steps start without an event (frequent and effect-free); tool steps have one
    assert [e.kind for e in events] == ["step.completed", "step.failed"]
    assert events[0].data == {"task": task.id, "step": 1, "kind": "model", "name": "gpt",
                              "tokens_in": 10, "tokens_out": 5}


async def test_approvals(store: SQLiteBlackboard, claimed: Claim) -> None:
    run, task, lease = await claimed()
    approval = await store.request_approval(task.id, lease, retry=0, step=3, tool="shell",
                                            arguments={"cmd": "rm -rf build"})
    parked = await store.get_task(task.id)
    assert (parked.status, parked.lease_owner) == ("waiting", None)
    assert await store.find_approval(task.id, 0, 3) == approval
    assert await store.list_approvals(run.id, status="pending") == [approval]
    decided = await store.decide_approval(approval.id, approved=True, by="alice", reason="ok")
    assert (decided.status, decided.decided_by, decided.reason) == ("approved", "alice", "ok")
    assert (await store.get_task(task.id)).status == "pending"
    with pytest.raises(UserError, match="already approved by 'alice'"):
        await store.decide_approval(approval.id, approved=False, by="bob")
    retaken = await store.claim_task("worker-2")
    assert retaken is not None and retaken.id == task.id
    again = await store.request_approval(task.id, Lease("worker-2", retaken.attempt), retry=0,
                                         step=3, tool="shell", arguments={})
    assert again == decided  # already decided: returned as is, the task keeps running
    assert (await store.get_task(task.id)).status == "running"
    assert await store.get_approval(approval.id) == decided
    assert [e.kind for e in await store.events(run.id)][-5:] == [
        "approval.requested", "task.waiting", "approval.decided", "task.requeued",
        "task.claimed"]


async def test_unknown_ids_raise_not_found(store: SQLiteBlackboard) -> None:
    for call in (store.get_run("nope"), store.get_task("nope"), store.events("nope"),
                 store.list_tasks("nope"), store.get_plans("nope"), store.agent_infos("nope"),
                 store.set_run_status("nope", "cancelled"), store.delete_run("nope"),
                 store.add_tasks("nope", [NewTask("a", 1)]), store.get_approval("nope"),
                 store.decide_approval("nope", approved=True, by="x"),
                 store.append_event("nope", "x", {}), store.post_note("nope", "a", NewNote("b")),
                 store.step_counts("nope"), store.get_steps("nope", 0)):
        with pytest.raises(NotFoundError, match="nope"):
            await call


async def test_follow_yields_events_as_they_commit(store: SQLiteBlackboard) -> None:
    run = await store.create_run("p", {})
    seen: list[int] = []

    async def follow() -> None:
        async for event in store.follow(run.id, starting_after=1, poll_interval=5.0):
            seen.append(event.seq)
            if event.seq == 4:
                return

    follower = asyncio.create_task(follow())
    await asyncio.sleep(0)  # one turn: the follower starts, takes the commit signal, reads
    assert store.stats().followers == 1  # following before anything is appended
    for i in range(3):
        await store.append_event(run.id, "custom", {"i": i})
    # poll_interval is 5 s: finishing quickly proves the commit woke the follower.
    await asyncio.wait_for(follower, 2.0)
    assert seen == [2, 3, 4]


async def test_follow_polls_for_commits_from_other_connections(store: SQLiteBlackboard,
                                                               db_path: Path) -> None:
    run = await store.create_run("p", {})
    seen: list[str] = []

    async def follow() -> None:
        async for event in store.follow(run.id, starting_after=1, poll_interval=0.02):
            seen.append(event.kind)
            if len(seen) == 2:
                return

    follower = asyncio.create_task(follow())
    # Another instance (as another process would) writes: no in-process wake-up reaches us.
    async with await SQLiteBlackboard.open(db_path) as other:
        await other.append_event(run.id, "a", {})
        await other.append_event(run.id, "b", {})
    await asyncio.wait_for(follower, 2.0)
    assert seen == ["a", "b"]


async def test_model_reply_is_stored_once_and_read_back_whole(store: SQLiteBlackboard,
                                                              claimed: Claim) -> None:
    run, task, lease = await claimed()
    agent = f"{run.id}/coder"
    text = "a long reply " * 20
    await store.complete_step(
        StepResult(task.id, 0, 1, "model", "model", "d", output={"text": text, "calls": []}),
        lease, agent_id=agent,
        writes=Writes(messages=[Message("user", "q"), Message("assistant", text)]))
    [step] = await store.get_steps(task.id, 0)
    assert step.output == {"text": text, "calls": []}
    [(raw,)] = query(Path(store.path),  # the journal row holds a pointer only
                     "SELECT output FROM steps WHERE task_id = ?", task.id)
    assert text not in raw and '"text_seq":2' in raw
