"""Test doubles that ship with orchestra: scripted replies, no network.

``FunctionModel`` answers with a plain function of the request; ``ScriptedModel``
pops replies from a queue, records every call and checks all were used.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from orchestra._errors import UserError
from orchestra.models.base import ModelRequest, ModelResponse, ToolCall, Usage
from orchestra.tokens import estimate_tokens

Reply = ModelResponse | str
ReplyFn = Callable[[ModelRequest], Reply | Awaitable[Reply]]


def tool_call(name: str, arguments: dict[str, Any] | str | None = None, *,
              id: str | None = None) -> ToolCall:
    """Build a tool call; ``arguments`` may be a dict or raw (possibly invalid) JSON text."""
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments or {})
    return ToolCall(id=id or f"call_{name}", name=name, arguments=raw)


def reply(text: str = "", *tool_calls: ToolCall) -> ModelResponse:
    """A response with text and/or tool calls (usage is filled in by the double)."""
    return ModelResponse(text=text, tool_calls=tuple(tool_calls),
                         finish_reason="tool_calls" if tool_calls else "stop")


def _with_usage(request: ModelRequest, response: Reply, name: str) -> ModelResponse:
    if isinstance(response, str):
        response = ModelResponse(text=response)
    if response.usage.input_tokens or response.usage.output_tokens:
        return response
    tokens_in = sum(estimate_tokens(m.content) for m in request.messages)
    tokens_out = estimate_tokens(response.text) + sum(
        estimate_tokens(c.arguments) for c in response.tool_calls)
    return ModelResponse(text=response.text, tool_calls=response.tool_calls,
                         usage=Usage(tokens_in, tokens_out), finish_reason=response.finish_reason,
                         model=response.model or name)


class FunctionModel:
    """A model whose replies come from ``fn(request)`` (sync or async)."""

    def __init__(self, fn: ReplyFn, *, name: str = "function") -> None:
        self.fn = fn
        self.name = name
        self.calls: list[ModelRequest] = []

    async def request(self, request: ModelRequest) -> ModelResponse:
        self.calls.append(request)
        result = self.fn(request)
        if inspect.isawaitable(result):
            result = await result
        return _with_usage(request, result, self.name)


class ScriptedModel:
    """Pops one scripted reply per call; a reply may also be a function of the request."""

    def __init__(self, replies: Iterable[Reply | ReplyFn], *, name: str = "scripted") -> None:
        self.replies: list[Reply | ReplyFn] = list(replies)
        self.name = name
        self.calls: list[ModelRequest] = []

    @property
    def remaining(self) -> int:
        return len(self.replies) - len(self.calls)

    async def request(self, request: ModelRequest) -> ModelResponse:
        index = len(self.calls)
        if index >= len(self.replies):
            last = request.messages[-1].content[:200] if request.messages else ""
            raise UserError(
                f"ScriptedModel {self.name!r} ran out of replies: call {index + 1} but only "
                f"{len(self.replies)} scripted. Last message: {last!r}. Add replies to the script."
            )
        self.calls.append(request)
        scripted = self.replies[index]
        result: Any = scripted(request) if callable(scripted) else scripted
        if inspect.isawaitable(result):
            result = await result
        return _with_usage(request, result, self.name)

    def assert_complete(self) -> None:
        """Fail if scripted replies were left unused."""
        if self.remaining:
            raise AssertionError(
                f"ScriptedModel {self.name!r}: {self.remaining} of {len(self.replies)} "
                "scripted replies were never requested")
