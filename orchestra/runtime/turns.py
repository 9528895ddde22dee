"""The pieces of a task's turn loop that hold no runner state: the loop's carried state
(``Turns``) and a model reply turned into a journaled step outcome."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from orchestra._types import Message
from orchestra.models.base import ModelResponse, OutputSchema, ToolCall, ToolSchema, Usage
from orchestra.runtime.agent_state import FEEDBACK
from orchestra.runtime.journal import Journal, Outcome, usage_record
from orchestra.runtime.tool_calls import ToolRunner
from orchestra.store.protocol import Writes
from orchestra.tools import Rejection

MAX_REPLY_CHARS = 200_000


@functools.lru_cache(maxsize=256)
def system_message(instructions: str) -> Message:
    """A role's system prompt as a message, made once (messages are immutable)."""
    return Message("system", instructions)


def response_record(text: str, calls: tuple[ToolCall, ...], finish: str) -> dict[str, Any]:
    return {"text": text, "finish": finish,
            "calls": [[c.id, c.name, c.arguments] for c in calls]}


def reply_outcome(resp: ModelResponse, to_flush: list[Message], usage: Usage) -> Outcome:
    """A model reply as a step outcome: the reply (capped), its usage (``usage``: priced
    at the time of the call), and the messages to commit with it. Tool-call arguments
    are part of the reply: the same cap, and over it the calls are neither run nor
    stored (the model is told to send less)."""
    text = resp.text
    if len(text) > MAX_REPLY_CHARS:
        text = text[:2000] + f"\n[reply of {len(resp.text)} characters cut]"
    calls = tuple(resp.tool_calls)
    argument_chars = sum(len(c.arguments) for c in calls)
    if argument_chars > MAX_REPLY_CHARS:
        calls = ()
    record = response_record(text, calls, resp.finish_reason)
    if len(resp.text) > MAX_REPLY_CHARS:
        record["cut"] = len(resp.text)
    if argument_chars > MAX_REPLY_CHARS:
        record["arguments_cut"] = [[c.name, len(c.arguments)] for c in resp.tool_calls]
    reply = Message("assistant", text, calls)
    record["usage"] = usage_record(usage)
    if usage.cost:
        record["cost"] = usage.cost
    return Outcome(record, usage.input_tokens, usage.output_tokens, usage.cost,
                   Writes(messages=[*to_flush, reply]))


@dataclass(slots=True)
class Turns:
    """What a task's turn loop carries from one turn to the next."""

    journal: Journal
    task_id: str
    system: Message
    pinned: Message
    schemas: tuple[ToolSchema, ...]
    output_schema: OutputSchema | None
    task_msgs: list[Message]
    """The task's messages so far (the model's view is built from them)."""
    pending: list[Message]
    """Messages not stored yet: they commit with the next step."""
    failures: int = 0
    """Unusable replies in a row (a fresh start follows a few)."""
    rejections: list[Rejection] = field(default_factory=list)
    """Usable answers that ``check_output`` sent back in this attempt, in order."""
    rejected: set[str] = field(default_factory=set)
    """The texts of those answers: the same one again counts as unusable (a repeat)."""
    last_problem: str = ""
    restart: int | None = None
    """Set after repeated failures: the view starts here, afresh."""
    done: set[tuple[str, str, str]] = field(default_factory=set)
    """(tool, arguments, result) seen in this task."""
    tools: ToolRunner | None = None
    """Made at the task's first tool call."""
    sample: str | None = None
    """What a new sample is asked with, once a check asked for one (``sample_afresh``):
    the role's ``sample_message`` (None: the task's message)."""
    sampling: bool = False

    def start_afresh(self, message: str | None = None) -> None:
        """From the next turn the model sees its task and the last problem only (or
        ``message``): the same failed exchange would likely get the same reply."""
        self.say(message or f"Your previous replies could not be used ({self.last_problem}). "
                 "Write a new answer to the task above (the answer only: do not "
                 "repeat the task's text).")
        self.restart = len(self.task_msgs) - 1

    def sample_afresh(self, message: str) -> None:
        """A new sample a check asked for: the task and ``message``; with no message, the
        task alone, as first asked (drawn independently of the answers before, not a
        repair of them: a check's ``ModelRetry("", fresh=True)``)."""
        self.sampling = True
        if message:
            self.start_afresh(message)
        else:
            self.restart = len(self.task_msgs)

    def afresh_view(self, restart: int) -> tuple[Message, ...]:
        """What the model sees once started afresh at ``restart``: see :func:`afresh`."""
        asked = self.pinned
        if self.sampling and self.sample is not None:
            asked = replace(asked, content=self.sample)
        return afresh(asked, self.task_msgs[restart:])

    def say(self, text: str) -> None:
        """Tell the model something (feedback): seen next turn, stored with the next step."""
        note = Message("user", text, name=FEEDBACK, task_id=self.task_id)
        self.task_msgs.append(note)
        self.pending.append(note)


def serialize_output(value: Any) -> Any:
    """A final answer as the store keeps it (a pydantic model as its JSON form)."""
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    return value


def afresh(pinned: Message, since: Sequence[Message]) -> tuple[Message, ...]:
    """The view of a task started afresh: its input and the note that restarts it as ONE
    user message, then what followed. Given two user turns in a row, a small model often
    answers the second by repeating the first (seen: a 1.5B echoing its task as code)."""
    if not since or since[0].role != "user":
        return (pinned, *since)
    return (replace(pinned, content=f"{pinned.content}\n\n# Note\n\n{since[0].content}"),
            *since[1:])
