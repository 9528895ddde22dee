"""Test doubles that ship with orchestra: scripted replies, no network.

``FunctionModel`` answers with a plain function of the request; ``ScriptedModel``
pops replies from a queue, records every call and checks all were used. Given
``stream=Chunks(...)``, either one also streams its answer (to a sink passed to
``request_stream``) a few characters at a time, as a provider would; without it,
it tells the sink nothing.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import json
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any

from orchestra._errors import UserError
from orchestra.models.base import DeltaSink, ModelRequest, ModelResponse, ToolCall, Usage
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


def stopped(response: ModelResponse, stop: tuple[str, ...]) -> ModelResponse:
    """``response`` as a server asked with ``stop`` returns it: its text up to the first
    stop string (left out), ``finish_reason`` "stop"."""
    ends = [i for i in (response.text.find(s) for s in stop) if i >= 0]
    if not ends or response.tool_calls:
        return response
    return dataclasses.replace(response, text=response.text[:min(ends)], finish_reason="stop")


def _with_usage(request: ModelRequest, response: Reply, name: str) -> ModelResponse:
    if isinstance(response, str):
        response = ModelResponse(text=response)
    response = stopped(response, request.settings.stop)  # what a server would send
    if response.usage.input_tokens or response.usage.output_tokens:
        return response
    tokens_in = sum(estimate_tokens(m.content) for m in request.messages)
    tokens_out = estimate_tokens(response.text) + sum(
        estimate_tokens(c.arguments) for c in response.tool_calls)
    return ModelResponse(text=response.text, tool_calls=response.tool_calls,
                         usage=Usage(tokens_in, tokens_out), finish_reason=response.finish_reason,
                         model=response.model or name)


@dataclass(frozen=True, slots=True)
class Chunks:
    """How a test double streams: ``size`` characters a piece, ``every`` seconds apart."""

    size: int = 8
    every: float = 0.0

    def __post_init__(self) -> None:
        if self.size < 1 or not self.every >= 0:
            raise UserError(f"Chunks(size={self.size}, every={self.every}): give size >= 1 "
                            "character and every >= 0 seconds")


async def stream_reply(response: ModelResponse, sink: DeltaSink, chunks: Chunks) -> None:
    """Tell ``sink`` ``response``'s text, then each tool call's arguments, in pieces."""
    pieces: list[tuple[int | None, str, str]] = [
        (None, "", response.text[i:i + chunks.size])
        for i in range(0, len(response.text), chunks.size)]
    for number, call in enumerate(response.tool_calls):
        pieces += [(number, call.name, call.arguments[i:i + chunks.size])
                   for i in range(0, len(call.arguments), chunks.size)]
    for index, name, piece in pieces:
        if chunks.every:
            await asyncio.sleep(chunks.every)
        if index is None:
            sink.text(piece)
        else:
            sink.arguments(index, name, piece)


class _Streams:
    """``request_stream`` for a double whose ``request`` makes the whole reply."""

    stream: Chunks | None

    async def request(self, request: ModelRequest) -> ModelResponse:
        raise NotImplementedError

    async def request_stream(self, request: ModelRequest, sink: DeltaSink) -> ModelResponse:
        response = await self.request(request)
        if self.stream is not None:
            await stream_reply(response, sink, self.stream)
        return response


class FunctionModel(_Streams):
    """A model whose replies come from ``fn(request)`` (sync or async)."""

    local = True  # a test double: its calls cost nothing

    def __init__(self, fn: ReplyFn, *, name: str = "function",
                 stream: Chunks | None = None) -> None:
        self.fn = fn
        self.name = name
        self.stream = stream
        self.calls: list[ModelRequest] = []

    async def request(self, request: ModelRequest) -> ModelResponse:
        self.calls.append(request)
        result = self.fn(request)
        if inspect.isawaitable(result):
            result = await result
        return _with_usage(request, result, self.name)


class ScriptedModel(_Streams):
    """Pops one scripted reply per call; a reply may also be a function of the request."""

    local = True  # a test double: its calls cost nothing

    def __init__(self, replies: Iterable[Reply | ReplyFn], *, name: str = "scripted",
                 stream: Chunks | None = None) -> None:
        self.replies: list[Reply | ReplyFn] = list(replies)
        self.name = name
        self.stream = stream
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
