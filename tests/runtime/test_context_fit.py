"""Requests fit the model's context; failed attempts leave later tasks' views."""

from __future__ import annotations

from orchestra._types import Message, ToolCallRecord
from orchestra.compaction import message_tokens
from orchestra.models.base import ModelSettings, ToolSchema
from orchestra.runtime.agent_state import ATTEMPT_FAILED, FEEDBACK, AgentState
from orchestra.runtime.context_fit import MARGIN, fit_context, fixed_tokens

SYSTEM = (Message("system", "You work."),)
TOOL = ToolSchema("read", "Read a file.", {"type": "object", "properties": {
    "path": {"type": "string"}}})


def history(turns: int) -> list[Message]:
    out = [Message("user", "the task " * 20, name="task")]
    for i in range(turns):
        call = ToolCallRecord(f"c{i}", "read", '{"path": "f.py"}')
        out += [Message("assistant", "", (call,)),
                Message("tool", "line of code\n" * 40, tool_call_id=f"c{i}", name="read")]
    return out


def test_without_a_known_context_nothing_is_cut() -> None:
    messages = history(50)
    assert fit_context(messages, fixed=SYSTEM, tools=(TOOL,), output=None,
                       settings=ModelSettings(), context=None, pinned=messages[0]) == tuple(
        messages)


def test_the_request_fits_the_context_with_the_task_and_whole_blocks() -> None:
    messages = history(50)
    settings = ModelSettings(max_tokens=500)
    kept = fit_context(messages, fixed=SYSTEM, tools=(TOOL,), output=None, settings=settings,
                       context=4096, pinned=messages[0])
    assert kept[0] is messages[0]  # the task input stays, first
    assert kept[-1] is messages[-1]  # the newest turn stays
    assert kept[1].role == "assistant"  # a tool result never loses its call
    used = sum(message_tokens(m) for m in kept) + fixed_tokens(SYSTEM, (TOOL,), None)
    assert used * MARGIN + 500 <= 4096
    assert len(kept) < len(messages)
    small = history(2)
    assert fit_context(small, fixed=SYSTEM, tools=(), output=None, settings=settings,
                       context=4096, pinned=small[0]) == tuple(small)


def test_failed_attempts_and_unusable_replies_leave_the_next_tasks_view() -> None:
    agent = AgentState("r/coder", "coder", "r")
    t1 = [Message("user", "task 1", name="task", task_id="t1", seq=1),
          Message("assistant", "junk", task_id="t1", seq=2),
          Message("user", "not JSON", name=FEEDBACK, task_id="t1", seq=3),
          Message("assistant", "more junk", task_id="t1", seq=4),
          Message("user", "(attempt 1 failed)", name=ATTEMPT_FAILED, task_id="t1", seq=5),
          Message("user", "task 1", name="task", task_id="t1", seq=6),
          Message("assistant", "bad", task_id="t1", seq=7),
          Message("user", "schema mismatch", name=FEEDBACK, task_id="t1", seq=8),
          Message("assistant", '{"ok": true}', task_id="t1", seq=9)]
    agent.history.extend(t1)
    agent._task_ids.add("t1")
    seen = agent.prior("t2")
    assert [m.seq for m in seen] == [6, 9]
    assert agent.history == t1  # the store's history is untouched


def test_a_failed_attempt_joining_a_long_clean_history_is_still_hidden() -> None:
    """``prior`` looks only at messages added since its last look (a turn must not cost
    in proportion to the agent's age), yet a failed attempt that joins later is hidden."""
    agent = AgentState("r/coder", "coder", "r")
    agent.committed("t1", [Message("user", "task one"), Message("assistant", "done")])
    agent.task_done("t1")
    assert [m.content for m in agent.prior("t3")] == ["task one", "done"]
    agent.committed("t2", [Message("user", "task two"), Message("assistant", "bad"),
                           Message("user", "(attempt 1 failed)", name=ATTEMPT_FAILED)])
    agent.task_done("t2")
    assert [m.content for m in agent.prior("t3")] == ["task one", "done"]
    agent.history.append(Message("user", "three", agent_id="r/coder", seq=6, task_id="t4"))
    assert [m.content for m in agent.prior("t5")] == ["task one", "done", "three"]


def test_a_committed_message_keeps_every_field_but_its_place() -> None:
    """``committed`` builds the stored message field by field (cheaper than ``replace``):
    a field added to ``Message`` must not be dropped there."""
    import dataclasses

    agent = AgentState("r/coder", "coder", "r")
    sent = Message("assistant", "x", (ToolCallRecord("c1", "read", "{}"),), "c0", "n",
                   agent_id="other", seq=99, task_id="elsewhere")
    agent.committed("t1", [sent])
    agent.task_done("t1")
    assert agent.history == [dataclasses.replace(sent, agent_id="r/coder", seq=1,
                                                 task_id="t1")]
    assert {f.name for f in dataclasses.fields(Message)} == {
        "role", "content", "tool_calls", "tool_call_id", "name", "agent_id", "seq", "task_id"
    }, "a new Message field: copy it in AgentState.committed"
