"""Keeping every request inside the model's context window.

A compaction policy decides what an agent should see; this makes sure what it sees
fits the model it talks to, when the model says how large its context is
(``context_tokens``: ``gguf:…?n_ctx=8192``, ``…#local?context=8192``). Without it a
small local model fails with "the request exceeds the available context size" as
soon as a task's exchange grows. Counts are estimates in another tokenizer, so the
budget keeps a margin; the newest messages are kept, whole tool-call blocks, and the
task input always.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from orchestra._types import Message
from orchestra.compaction import blocks, message_tokens
from orchestra.models.base import ModelSettings, OutputSchema, ToolSchema
from orchestra.tokens import count_tokens

MARGIN = 1.25
"""Counted tokens are multiplied by this: the model's tokenizer may split finer."""
DEFAULT_REPLY_SHARE = 4
"""Without ``max_tokens``, a quarter of the context is left for the reply."""


def fixed_tokens(fixed: Sequence[Message], tools: Sequence[ToolSchema],
                 output: OutputSchema | None) -> int:
    """Tokens of what every request carries whatever the history: prompt and schemas."""
    total = sum(message_tokens(m) for m in fixed)
    for tool in tools:
        total += count_tokens(tool.name + tool.description + json.dumps(tool.parameters))
    if output is not None:
        total += count_tokens(json.dumps(output.json_schema))
    return total


def fit_context(messages: Sequence[Message], *, fixed: Sequence[Message],
                tools: Sequence[ToolSchema], output: OutputSchema | None,
                settings: ModelSettings, context: int | None,
                pinned: Message | None) -> tuple[Message, ...]:
    """The newest part of ``messages`` that fits ``context`` with the reply's room.

    ``pinned`` (the task input) is always kept, in its place; so is the newest block,
    even alone over budget (the server then says so, rather than the model seeing no
    question at all).
    """
    if context is None:
        return tuple(messages)
    reply = settings.max_tokens or context // DEFAULT_REPLY_SHARE
    budget = int((context - reply) / MARGIN) - fixed_tokens(fixed, tools, output)
    costs = [message_tokens(m) for m in messages]
    if sum(costs) <= budget:
        return tuple(messages)
    spent = message_tokens(pinned) if pinned is not None else 0
    kept: list[Message] = []
    for block in reversed(blocks(messages)):
        cost = sum(message_tokens(m) for m in block if m is not pinned)
        if kept and spent + cost > budget:
            break
        spent += cost
        kept[:0] = block
    if pinned is not None and not any(m is pinned for m in kept):
        kept.insert(0, pinned)
    return tuple(kept)
