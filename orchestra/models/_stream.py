"""Streamed chat completions, read back into one response body.

A local model writes 10-20 tokens a second on two cores: a 2,000-token answer takes
minutes, and a request that sends nothing until it is done cannot tell a slow server
from a dead one. Streamed, every token is a sign of life, so the adapter's timeout
becomes a limit on *silence* (the HTTP client's read timeout applies to each chunk)
rather than on the answer's length. The chunks are folded back into the body a
non-streamed call returns, so one parser (:func:`chat_response`) reads both, usage
and server timings (llama.cpp's prompt tokens evaluated and reused) included.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from orchestra.models.base import DeltaSink

__all__ = ["LoopGuard", "StreamError", "cut_off", "fold_chunks", "report_chunk", "sse_chunks"]


class StreamError(ValueError):
    """The stream carried something that is not a chat-completions chunk."""


async def sse_chunks(lines: AsyncIterator[str]) -> AsyncIterator[dict[str, Any]]:
    """The JSON chunks of a server-sent event stream (``data: {...}`` lines), up to
    ``data: [DONE]``. An ``error`` event (llama.cpp, vLLM) raises :class:`StreamError`."""
    async for raw in lines:
        line = raw.strip()
        if not line.startswith("data:"):
            continue  # comments, event names, keep-alives
        data = line[5:].strip()
        if data == "[DONE]":
            return
        try:
            chunk = json.loads(data)
        except json.JSONDecodeError as exc:
            raise StreamError(f"a streamed chunk is not JSON ({exc.msg}): {data[:120]!r}"
                              ) from None
        if not isinstance(chunk, dict):
            raise StreamError(f"a streamed chunk is a {type(chunk).__name__}, not an object")
        if "error" in chunk and "choices" not in chunk:
            error = chunk["error"]
            message = error.get("message") if isinstance(error, dict) else error
            raise StreamError(f"the server reported an error mid-stream: {message}")
        yield chunk


def report_chunk(chunk: dict[str, Any], sink: DeltaSink) -> None:
    """Tell ``sink`` the text and tool-call argument pieces of one chunk (choice 0, as
    :func:`fold_chunks` reads them: concatenated, they are its message)."""
    for choice in chunk.get("choices") or ():
        if not isinstance(choice, dict) or choice.get("index", 0) != 0:
            continue
        delta = choice.get("delta") or {}
        if isinstance(delta.get("content"), str) and delta["content"]:
            sink.text(delta["content"])
        for i, call in enumerate(delta.get("tool_calls") or ()):
            if not isinstance(call, dict):
                continue
            function = call.get("function") or {}
            arguments = function.get("arguments")
            arguments = arguments if isinstance(arguments, str) else ""
            name = function.get("name")
            if arguments or name:  # the name comes first, alone
                sink.arguments(int(call.get("index", i)), str(name or ""), arguments)


def _fold_tool_calls(calls: dict[int, dict[str, Any]], deltas: Any) -> None:
    """Add one chunk's tool-call pieces to ``calls`` (by index: id, name, argument text)."""
    for i, call in enumerate(deltas):
        if not isinstance(call, dict):
            continue
        slot = calls.setdefault(int(call.get("index", i)),
                                {"id": None, "type": "function",
                                 "function": {"name": "", "arguments": ""}})
        if call.get("id"):
            slot["id"] = call["id"]
        function = call.get("function") or {}
        if function.get("name"):
            slot["function"]["name"] += function["name"]
        if isinstance(function.get("arguments"), str):
            slot["function"]["arguments"] += function["arguments"]


def fold_chunks(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """The chat-completions body the ``chunks`` of one streamed choice add up to."""
    content: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    body: dict[str, Any] = {}
    finish: Any = None
    refusal: list[str] = []
    for chunk in chunks:
        for key in ("id", "model", "created", "system_fingerprint"):
            if chunk.get(key) is not None:
                body[key] = chunk[key]
        for key in ("usage", "timings"):  # the last chunk carries them (include_usage)
            if isinstance(chunk.get(key), dict):
                body[key] = chunk[key]
        for choice in chunk.get("choices") or ():
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            finish = choice.get("finish_reason") or finish
            delta = choice.get("delta") or {}
            if isinstance(delta.get("content"), str):
                content.append(delta["content"])
            if isinstance(delta.get("refusal"), str):
                refusal.append(delta["refusal"])
            _fold_tool_calls(calls, delta.get("tool_calls") or ())
    message: dict[str, Any] = {"role": "assistant", "content": "".join(content) or None}
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    if refusal:
        message["refusal"] = "".join(refusal)
    body["choices"] = [{"index": 0, "message": message, "finish_reason": finish}]
    return body


LOOP_LINES = 30
"""Consecutive lines of one shape (digits aside) that make a reply a loop: a small model
asked greedily may write ``assert f(1.0, 0.1)``, ``assert f(1.0, 0.01)``, ... until its
token cap, minutes on two cores. No answer needs thirty such lines in a row."""
_DIGITS = re.compile(r"\d+")


class LoopGuard:
    """Watches a streamed reply's text for a loop (:data:`LOOP_LINES` lines of one
    shape in a row); O(1) per chunk."""

    def __init__(self, lines: int = LOOP_LINES) -> None:
        self.lines = lines
        self._partial = ""
        self._shape = ""
        self._run = 0

    def looping(self, chunk: dict[str, Any]) -> bool:
        """Take one chunk's text (choice 0); True once the reply loops."""
        for choice in chunk.get("choices") or ():
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            text = (choice.get("delta") or {}).get("content")
            if not isinstance(text, str) or "\n" not in text:
                self._partial += text if isinstance(text, str) else ""
                continue
            *done, self._partial = (self._partial + text).split("\n")
            for line in done:
                shape = _DIGITS.sub("#", line.strip())
                same = len(shape) >= 8 and shape == self._shape
                self._shape, self._run = shape, self._run + 1 if same else 1
        return self._run >= self.lines


def cut_off(body: dict[str, Any]) -> dict[str, Any]:
    """A folded body whose stream the client ended (a loop): it reads as a reply cut off
    at its token cap (``finish_reason`` "length"), what callers already handle."""
    for choice in body.get("choices") or ():
        choice["finish_reason"] = "length"
    return body
