"""StepJournal and AgentHistory: steps are final once completed; histories are gap-free."""

from __future__ import annotations

import pytest
from backends import Backend, Claimed

from orchestra._errors import StoreError
from orchestra._types import CompactionRecord, Message, ToolCallRecord
from orchestra.store import Blackboard, StepResult, Writes


async def test_a_completed_step_is_final_and_restarts_count_attempts(
        store: Blackboard, claimed: Claimed) -> None:
    run, task, lease = await claimed()
    agent = f"{run.id}/coder"
    await store.start_step(task.id, 0, 1, "tool", "grep", "d1", lease)
    await store.start_step(task.id, 0, 1, "tool", "grep", "d1", lease)  # re-run after a crash
    result = StepResult(task.id, 0, 1, "tool", "grep", "d1", {"hits": 2}, tokens_in=3,
                        tokens_out=4, cost=0.5)
    await store.complete_step(result, lease, agent_id=agent,
                              writes=Writes(messages=[Message("tool", "2 hits")]))
    [step] = await store.get_steps(task.id, 0)
    assert (step.status, step.output, step.attempts, step.tokens_in) == (
        "completed", {"hits": 2}, 2, 3)
    with pytest.raises(StoreError, match="already completed"):
        await store.complete_step(result, lease, agent_id=agent,
                                  writes=Writes(messages=[Message("tool", "again")]))
    await store.start_step(task.id, 0, 1, "tool", "grep", "d1", lease)  # no-op when completed
    assert [m.content for m in await store.get_messages(agent)] == ["2 hits"]
    assert (await store.get_steps(task.id, 0))[0].status == "completed"
    assert await store.get_steps(task.id, 1) == []
    counts = await store.step_counts(run.id)
    assert (counts["completed"], counts["reissued"]) == (1, 1)
    totals = await store.get_run(run.id)
    assert (totals.tokens_in, totals.tokens_out, totals.cost, totals.steps) == (3, 4, 0.5, 1)


async def test_a_model_reply_reads_back_whole(store: Blackboard, claimed: Claimed) -> None:
    run, task, lease = await claimed()
    agent = f"{run.id}/coder"
    text = "a reply long enough to be worth storing once " * 4
    await store.complete_step(StepResult(task.id, 0, 1, "model", "model", "d", {"text": text}),
                              lease, agent_id=agent,
                              writes=Writes(messages=[Message("assistant", text)]))
    assert (await store.get_steps(task.id, 0))[0].output == {"text": text}


async def test_histories_get_store_assigned_gap_free_seqs(store: Blackboard,
                                                          claimed: Claimed) -> None:
    run, task, lease = await claimed()
    agent = f"{run.id}/coder"
    call = ToolCallRecord("c1", "read", '{"path": "a"}')
    for step in (1, 2):
        await store.complete_step(
            StepResult(task.id, 0, step, "model", "model", "d"), lease, agent_id=agent,
            writes=Writes(messages=[Message("user", f"q{step} about sqlite"),
                                    Message("assistant", f"a{step}", tool_calls=(call,))]))
    history = await store.get_messages(agent)
    assert [(m.seq, m.content, m.task_id, m.agent_id) for m in history] == [
        (1, "q1 about sqlite", task.id, agent), (2, "a1", task.id, agent),
        (3, "q2 about sqlite", task.id, agent), (4, "a2", task.id, agent)]
    assert history[1].tool_calls == (call,)
    assert [m.seq for m in await store.get_messages(agent, after_seq=2, limit=1)] == [3]
    hits = await store.search_messages(agent, "SQLITE q2")
    assert [m.seq for m in hits][:1] == [3] and {m.seq for m in hits} == {1, 3}
    await store.complete_step(
        StepResult(task.id, 0, 3, "compaction", "compact", "d"), lease, agent_id=agent,
        writes=Writes(compactions=[CompactionRecord(agent, 1, 2, "summary")]))
    [record] = await store.get_compactions(agent)
    assert (record.first_seq, record.last_seq, record.summary) == (1, 2, "summary")
    [info] = await store.agent_infos(run.id)
    assert (info.agent_id, info.role, info.messages, info.steps_completed) == (
        agent, "coder", 4, 3)


async def test_an_unreadable_row_is_an_error_naming_it_never_a_gap(
        store: Blackboard, claimed: Claimed, backend: Backend, spec: str) -> None:
    run, task, lease = await claimed()
    agent = f"{run.id}/coder"
    call = ToolCallRecord("c1", "read", "{}")
    await store.complete_step(StepResult(task.id, 0, 1, "model", "model", "d"), lease,
                              agent_id=agent,
                              writes=Writes(messages=[Message("user", "q"),
                                                      Message("assistant", "", (call,)),
                                                      Message("tool", "r", tool_call_id="c1")]))
    backend.damage(spec, agent, 2)
    with pytest.raises(StoreError, match=r"messages row .*unreadable"):
        await store.get_messages(agent)
