"""Keeping every request inside the model's context window.

A compaction policy decides what an agent should see; this makes sure what it sees
fits the model it talks to, when the model knows how large its context is
(``gguf:…?n_ctx=8192``, ``…#local?context=8192``, or asked of the server: see
:func:`~orchestra.models.base.context_window_of`). Without it a small local model
fails with "the request exceeds the available context size" as soon as a task's
exchange grows. Counts are estimates in another tokenizer, so the budget keeps a
margin; the newest messages are kept, whole tool-call blocks, and the task input
always. A request the server refuses for size anyway is fitted to the window the
refusal names and sent once more (:func:`ask_fitted`).

The window is learned per process and never journaled, which is safe: fitting shapes
only requests still to be sent. A completed model step replays its recorded reply
without its request being built into anything stored (the journal matches a step by
number, kind and name; its input digest is informational), so a resumed process that
learns another window, or none, changes only the requests it actually sends.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace

from orchestra._errors import ContextOverflowError
from orchestra._log import get_logger
from orchestra._types import Message
from orchestra.compaction import blocks, message_tokens
from orchestra.models.base import (
    Model,
    ModelRequest,
    ModelResponse,
    ModelSettings,
    OutputSchema,
    ToolSchema,
    context_window_of,
)
from orchestra.tokens import count_tokens

MARGIN = 1.25
"""Counted tokens are multiplied by this: the model's tokenizer may split finer."""
DEFAULT_REPLY_SHARE = 4
"""Without ``max_tokens``, a quarter of the context is left for the reply."""

log = get_logger("orchestra.runtime")


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


def refit_window(error: ContextOverflowError, fitted_to: int | None) -> int | None:
    """The window to fit a request to after the server refused it for size: the one the
    server named; when the request was fitted to that window already (the count here
    fell short of the server's), that window shrunk by the server's count over it.
    None when the server named no window (nothing to fit to)."""
    served = error.context_tokens
    if served is None:
        return None
    if fitted_to is None or fitted_to > served:
        return served
    counted = error.prompt_tokens
    ratio = served / counted if counted and counted > served else 0.75
    return max(1, int(fitted_to * ratio))


def refit(request: ModelRequest, *, fixed: int, pinned: Message | None,
          context: int) -> ModelRequest:
    """``request`` with its view (what follows its ``fixed`` first messages: the prompt
    and a summary) fitted to ``context``: what :func:`fit_context` would have built at
    that size, since the newest part of the newest part is the newest part."""
    head = request.messages[:fixed]
    return replace(request, messages=head + fit_context(
        request.messages[fixed:], fixed=head, tools=request.tools, output=request.output,
        settings=request.settings, context=context, pinned=pinned))


class ContextWindow:
    """One task's requests fitted to its model's window: the window is learned at the
    first fit (asked of the model's server once per model) and narrowed when a refusal
    names a smaller one. :meth:`ask` sends what the last :meth:`fit` built."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.context: int | None = None
        """The window requests are fitted to (None: unknown, sent whole)."""
        self._learned = False
        self._fixed = 1  # the last fit's fixed messages (prompt, summary): a refit keeps them
        self._pinned: Message | None = None

    async def learned(self) -> int | None:
        """The window (asked of the model's server the first time)."""
        if not self._learned:
            self.context, self._learned = await context_window_of(self.model), True
        return self.context

    async def fit(self, messages: Sequence[Message], *, fixed: Sequence[Message],
                  tools: Sequence[ToolSchema], output: OutputSchema | None,
                  settings: ModelSettings, pinned: Message | None) -> tuple[Message, ...]:
        """:func:`fit_context` to the model's window, learned first if need be."""
        context = await self.learned()
        self._fixed, self._pinned = len(fixed), pinned
        return fit_context(messages, fixed=fixed, tools=tools, output=output,
                           settings=settings, context=context, pinned=pinned)

    async def ask(self, send: Callable[[Model, ModelRequest, int], Awaitable[ModelResponse]],
                  request: ModelRequest, n: int) -> ModelResponse:
        """``send(model, request, n)``. Refused for size, the request is refitted to the
        window the refusal names (:func:`refit_window`) and sent once more; refused again,
        the error says so. Both sends are one journaled step (``n``): the journal records
        the reply, never the request, so a replay needs no refit."""
        try:
            return await send(self.model, request, n)
        except ContextOverflowError as exc:
            window = refit_window(exc, self.context)
            if window is None:
                raise
            log.info("context.refit", model=getattr(self.model, "name", ""), context=window,
                     was=self.context, counted=exc.prompt_tokens)
            self.context = window
        refitted = refit(request, fixed=self._fixed, pinned=self._pinned, context=window)
        try:
            return await send(self.model, refitted, n)
        except ContextOverflowError as exc:
            raise ContextOverflowError(
                f"{exc} (refitted once, to a {window}-token window, it still did not fit)",
                model=exc.model, status=exc.status, context_tokens=exc.context_tokens,
                prompt_tokens=exc.prompt_tokens) from None
