"""Compaction invariants as properties over random histories with tool calls."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from orchestra import KeepAll, SlidingWindow, Summarize, TaskWindow, TokenBudget
from orchestra._types import ToolCallRecord
from orchestra.compaction import (
    SummaryRequest,
    View,
    blocks,
    message_tokens,
    tail_blocks,
)
from orchestra.runtime.agent_state import AgentState
from orchestra.types import CompactionRecord, Message


@st.composite
def histories(draw: st.DrawFn) -> tuple[list[Message], Message]:
    """A stored history of turns (some with tool calls) and the pinned task input."""
    msgs: list[Message] = []
    seq = 0

    def add(m: Message) -> None:
        nonlocal seq
        seq += 1
        msgs.append(Message(m.role, m.content, m.tool_calls, m.tool_call_id, m.name,
                            "a", seq, m.task_id))

    turns = draw(st.integers(1, 40))
    pin_at = draw(st.integers(0, turns - 1))
    pinned: Message | None = None
    for i in range(turns):
        text = "x" * draw(st.integers(1, 400))
        add(Message("user", text, name="task" if i == pin_at else None))
        if i == pin_at:
            pinned = msgs[-1]
        n_calls = draw(st.integers(0, 3))
        calls = tuple(ToolCallRecord(f"c{i}_{k}", "t", "{}") for k in range(n_calls))
        add(Message("assistant", "y" * draw(st.integers(0, 300)), calls))
        for c in calls:
            add(Message("tool", "z" * draw(st.integers(1, 300)), tool_call_id=c.id, name="t"))
        if calls:
            add(Message("assistant", "done"))
    assert pinned is not None
    return msgs, pinned


def _check_view(view: View, history: list[Message], pinned: Message) -> None:
    kept = view.messages
    assert any(m is pinned for m in kept), "the task input must always be kept"
    ids = [id(m) for m in kept]
    assert len(ids) == len(set(ids))
    order = {id(m): i for i, m in enumerate(history)}
    assert [order[i] for i in ids] == sorted(order[i] for i in ids), "order is preserved"
    kept_ids = set(ids)
    for i, m in enumerate(history):
        if m.tool_calls and id(m) in kept_ids:
            results = [r for r in history[i + 1:i + 1 + len(m.tool_calls)]]
            assert all(id(r) in kept_ids for r in results), "a call keeps its results"
        if m.role == "tool" and id(m) in kept_ids:
            caller = next(h for h in reversed(history[:i]) if h.tool_calls)
            assert id(caller) in kept_ids or m is pinned, "a result keeps its call"


@settings(max_examples=150, deadline=None)
@given(histories(), st.integers(1, 30), st.integers(50, 4000))
def test_window_and_budget_invariants(h: tuple[list[Message], Message], last: int,
                                      budget: int) -> None:
    history, pinned = h
    for policy in (KeepAll(), SlidingWindow(last=last), TokenBudget(max_tokens=budget)):
        view = policy.view(history, summary=None, pinned=pinned)
        assert isinstance(view, View)
        _check_view(view, history, pinned)
        assert len(history) == len(history)  # the input list is never mutated


@settings(max_examples=150, deadline=None)
@given(histories(), st.integers(200, 3000))
def test_summarize_invariants_and_budget(h: tuple[list[Message], Message], threshold: int
                                         ) -> None:
    history, pinned = h
    before = list(history)
    policy = Summarize(threshold=threshold, keep_tokens=threshold // 2, summary_tokens=64)
    summary: CompactionRecord | None = None
    for _ in range(5):
        out = policy.view(history, summary=summary, pinned=pinned)
        if isinstance(out, View):
            break
        assert isinstance(out, SummaryRequest)
        seqs = [m.seq for m in out.messages]
        assert seqs == sorted(seqs) and all(s > 0 for s in seqs)
        assert all(m is not pinned for m in out.messages)
        first = summary.first_seq if summary else seqs[0]
        summary = CompactionRecord("a", first, seqs[-1], "s" * 200)
    assert isinstance(out, View)
    _check_view(out, history, pinned)
    assert history == before, "raw messages are never changed"
    if summary is not None:
        assert out.summary is summary
        assert all(m.seq > summary.last_seq or m is pinned for m in out.messages)
        # the view fits the threshold unless one indivisible block is bigger
        sent = sum(message_tokens(m) for m in out.messages) + 60
        biggest = max(message_tokens(m) for m in history) * 4 + message_tokens(pinned)
        assert sent <= threshold + biggest


_ROLES = st.sampled_from(["system", "user", "assistant", "tool"])


@given(st.lists(st.tuples(_ROLES, st.booleans()), max_size=14))
def test_tail_blocks_are_the_blocks_newest_first(spec: list[tuple[str, bool]]) -> None:
    """Grouping from the end (what the window policies read) groups exactly as from the
    start, on any order of roles, including tool results with no call before them."""
    history = [Message(role, str(i), (ToolCallRecord("c", "t", "{}"),) if calls and
                       role == "assistant" else ()) for i, (role, calls) in enumerate(spec)]
    ids = [[id(m) for m in block] for block in reversed(blocks(history))]
    assert [[id(m) for m in block] for block in tail_blocks(history)] == ids


def test_a_window_reads_only_the_tail_of_a_long_history() -> None:
    """A window's view of a long-lived agent costs what it keeps, not the whole history:
    the policy must not walk older messages (here, ones that raise when touched)."""

    class Far(Message):
        __slots__ = ()

        def __getattribute__(self, name: str) -> object:
            raise AssertionError("an old message was read")

    old = [Far("user", "old") for _ in range(1000)]
    recent = [Message("user", "q"), Message("assistant", "", (ToolCallRecord("c", "t", "{}"),)),
              Message("tool", "r", tool_call_id="c"), Message("assistant", "a")]
    pinned = Message("user", "task", name="task")
    view = SlidingWindow(last=4).view([*old, *recent, pinned], summary=None, pinned=pinned)
    assert isinstance(view, View) and view.messages[-1] is pinned and len(view.messages) == 4


def test_prior_history_leaves_out_only_the_tasks_own_messages() -> None:
    """Other tasks' messages stay, in seq order, whether they come before or between the
    task's own (tasks of one agent run concurrently and interleave)."""
    agent = AgentState("r/a", "a", "r", exclusive=False)
    owners = ["t1", "t2", "t1", "t3", "t2", "t1", "t3"]
    agent._joined([Message("user", str(i), agent_id="r/a", seq=i + 1, task_id=t)
                   for i, t in enumerate(owners)])
    agent.history = [Message("user", str(i), agent_id="r/a", seq=i + 1, task_id=t)
                     for i, t in enumerate(owners)]
    for task in ("t1", "t2", "t3", "t9"):
        assert [m.seq for m in agent.prior(task)] == \
            [i + 1 for i, t in enumerate(owners) if t != task]


def test_a_task_window_shows_the_current_task_alone() -> None:
    """The agent's earlier tasks stay out of view (a coder asked for another module is
    asked as if it were its first task); within the task, the window slides and keeps
    the pinned input."""
    earlier = [Message("user", "write a.py", name="task", task_id="t1"),
               Message("assistant", "a.py ...")]
    pinned = Message("user", "write b.py", name="task", task_id="t2")
    mine = [Message("assistant", f"b.py try {i}") if i % 2 == 0 else
            Message("user", f"feedback {i}") for i in range(6)]
    history = [*earlier, pinned, *mine]
    view = TaskWindow(last=20).view(history, summary=None, pinned=pinned)
    assert isinstance(view, View)
    assert list(view.messages) == [pinned, *mine]
    short = TaskWindow(last=3).view(history, summary=None, pinned=pinned)
    assert isinstance(short, View)
    assert list(short.messages) == [pinned, *mine[-3:]]
    every = SlidingWindow(last=20).view(history, summary=None, pinned=pinned)
    assert isinstance(every, View) and every.messages[0] is earlier[0]


def test_one_message_over_the_room_is_summarized_with_its_middle_cut() -> None:
    from orchestra._types import Message
    from orchestra.compaction import SummaryRequest, summary_part, summary_prompt
    from orchestra.tokens import estimate_tokens

    huge = Message("tool", "head " + "x" * 40_000 + " tail", seq=3)
    part = summary_part(SummaryRequest((huge, Message("user", "next", seq=4)), None, 64),
                        room=500, count=estimate_tokens)
    (only,) = part.messages
    assert only.seq == 3 and only.content.startswith("head ") and only.content.endswith(" tail")
    assert "characters cut" in only.content
    assert estimate_tokens(summary_prompt(part)) <= 700  # about the room, not 10,000
