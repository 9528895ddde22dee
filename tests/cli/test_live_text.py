"""What the console shows of the agents' text, from delta events alone: lines per role,
tool calls as ``tool(arguments``, a cut attempt marked, and no terminal control."""

from __future__ import annotations

from typing import Any

from orchestra._types import Event
from orchestra.cli.live_text import LiveText


def delta(seq: int, role: str, attempt: int = 1, step: int = 1, **data: Any) -> Event:
    return Event("r", seq, "model.delta", {"task": f"t-{role}", "role": role, "step": step,
                                           "retry": 0, "attempt": attempt, **data}, 0.0)


def test_lines_per_role_tool_calls_and_a_cut_attempt() -> None:
    text = LiveText()
    out = text.apply(delta(1, "coder", text="def f():\n    ret", first=True))
    out += text.apply(delta(2, "critic", text="Looks "))
    out += text.apply(delta(3, "coder", text="urn 1\n", calls=[[0, "write_file", '{"pa']]))
    assert out == ["coder | def f():", "coder |     return 1"]
    assert text.active() == {"coder": "def f(): ⏎     return 1 ⏎ write_file({\"pa",
                             "critic": "Looks "}
    out = text.apply(delta(4, "coder", attempt=2, text="def g", first=True, reissue=True))
    assert out == ['coder | write_file({"pa',
                   "coder | [attempt 1 interrupted: the call was made again]"]
    done = Event("r", 5, "step.completed", {"task": "t-coder", "step": 1}, 0.0)
    assert text.apply(done) == ["coder | def g"]
    assert list(text.active()) == ["critic"]  # only who is still writing


def test_a_models_control_characters_never_reach_the_terminal() -> None:
    text = LiveText()
    out = text.apply(delta(1, "coder", text="a\x1b[2J\rb\x9bc\n"))
    assert out == ["coder | a [2J b c"]
    assert "\x1b" not in text.active()["coder"]


def test_a_role_writing_for_two_tasks_at_once_keeps_each_answer_whole() -> None:
    """A role with concurrency > 1 writes several answers at once: their pieces interleave
    in the log, each line stays whole, and the role's one line shows its latest call."""
    text = LiveText()

    def piece(seq: int, task: str, words: str, **data: Any) -> list[str]:
        return text.apply(Event("r", seq, "model.delta", {
            "task": task, "role": "coder", "step": 1, "retry": 0, "attempt": 1,
            "text": words, **data}, 0.0))

    out = piece(1, "t1", "def one", first=True)
    out += piece(2, "t2", "def two", first=True)
    out += piece(3, "t1", "():\n    return 1\n")
    assert text.active() == {"coder": "def one(): ⏎     return 1 ⏎ "}
    out += piece(4, "t2", "():\n")
    assert text.active() == {"coder": "def two(): ⏎ "}
    assert text.apply(Event("r", 5, "step.failed", {"task": "t2", "step": 1}, 0.0)) == []
    assert text.active() == {"coder": "def one(): ⏎     return 1 ⏎ "}  # t1 still writing
    assert text.apply(Event("r", 6, "step.completed", {"task": "t1", "step": 1}, 0.0)) == []
    assert out == ["coder | def one():", "coder |     return 1", "coder | def two():"]
    assert text.active() == {}
