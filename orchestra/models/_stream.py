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
import zlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from orchestra.tokens import MESSAGE_OVERHEAD, estimate_tokens

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


LOOP_WINDOW = 2000
"""The characters of a reply's end that are checked for a loop (see :class:`LoopGuard`)."""
LOOP_RATIO = 0.10
"""zlib's compressed size over the window's size below which the reply loops. A small
model asked greedily may write ``assert f(1.0, 0.01)``, ``assert f(1.0, 0.001)``, ...
or one list longer on each line until its token cap (minutes on two cores): such ends
compress to 0.04-0.09 of their size; code and test files written by models and people
(487 files: this repository, the kata sets, the benchmarks' answers) to 0.12 and more."""


class LoopGuard:
    """Watches a streamed reply's text for a loop: the last :data:`LOOP_WINDOW`
    characters compress below :data:`LOOP_RATIO`, checked every 200 characters.

    Not only at a line's end: a small model also loops inside one line (a sentence
    said again and again, ``1234567890.`` until its cap), and such a reply has no
    line end to check at."""

    def __init__(self, window: int = LOOP_WINDOW, ratio: float = LOOP_RATIO) -> None:
        self.window, self.ratio = window, ratio
        self._text: list[str] = []
        self._size = 0
        self._checked = 0

    def looping(self, chunk: dict[str, Any]) -> bool:
        """Take one chunk's text (choice 0); True once the reply loops."""
        for choice in chunk.get("choices") or ():
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            text = (choice.get("delta") or {}).get("content")
            if isinstance(text, str) and text:
                self._text.append(text)
                self._size += len(text)
                if self._size >= self.window and self._size - self._checked >= 200:
                    self._checked = self._size
                    tail = "".join(self._text)[-self.window:]
                    self._text = [tail]
                    raw = tail.encode()
                    if len(zlib.compress(raw, 6)) < self.ratio * len(raw):
                        return True
        return False


def cut_off(body: dict[str, Any], chunks: list[dict[str, Any]],
            prompt: list[dict[str, Any]]) -> dict[str, Any]:
    """A folded body whose stream the client ended (a loop): it reads as a reply cut off
    at its token cap (``finish_reason`` "length"), what callers already handle.

    The usage block comes only in a stream's last chunk, which was never read; the
    tokens were still spent, so they are counted rather than reported as none: one per
    chunk of text streamed (servers stream a token a chunk), and the ``prompt``
    messages estimated (:func:`orchestra.tokens.estimate_tokens`)."""
    for choice in body.get("choices") or ():
        choice["finish_reason"] = "length"
    if not isinstance(body.get("usage"), dict):
        streamed = sum(1 for c in chunks for choice in c.get("choices") or ()
                       if isinstance(choice, dict)
                       and isinstance((choice.get("delta") or {}).get("content"), str))
        asked = sum(estimate_tokens(str(m.get("content") or "")) + MESSAGE_OVERHEAD
                    for m in prompt)
        body["usage"] = {"prompt_tokens": asked, "completion_tokens": streamed}
    return body
