"""Record real model calls to a JSON-lines file and replay them offline.

Each line is one call::

    {"key": "<sha256 of the canonical request>", "index": 0,
     "request": {...canonical request...}, "response": {...}}

The canonical request keeps what decides a model's answer: the messages (role,
content, tool calls, tool call id, name), the tools' names and schemas, the output
schema and the sampling settings, as JSON with sorted keys. Replay looks responses
up by that key, so concurrent agents may ask in any order; identical requests get
the recorded responses in turn.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
from collections import deque
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from orchestra._errors import UserError
from orchestra._log import get_logger
from orchestra.models._replay_diff import (
    _around_first_change,
    _count_differences,
    _first_difference,
    _shared_messages,
    _show,
)
from orchestra.models.base import (
    DeltaSink,
    Model,
    ModelRequest,
    ModelResponse,
    runs_locally,
    streams,
)
from orchestra.models.recording_file import (
    RecordedCall,
    dump_response,
    load_response,
    read_recording,
    recorded_calls,
    recording_rows,
    responses_from_file,
)
from orchestra.models.tape import APPEND_LOCK, TapePlayer, TapeRecorder
from orchestra.models.testing import Chunks, stream_reply

log = get_logger("orchestra.models")

__all__ = [
    "RecordedCall",
    "RecordingModel",
    "ReplayMismatchError",
    "ReplayModel",
    "canonical_request",
    "dump_response",
    "load_response",
    "read_recording",
    "request_key",
    "responses_from_file",
    "task_local",
]

def canonical_request(request: ModelRequest) -> dict[str, Any]:
    """The parts of ``request`` that decide the answer, as plain JSON data."""
    settings = request.settings
    output = request.output
    return {
        "messages": [
            {"role": m.role, "content": m.content,
             "tool_calls": [{"id": c.id, "name": c.name, "arguments": c.arguments}
                            for c in m.tool_calls],
             "tool_call_id": m.tool_call_id, "name": m.name}
            for m in request.messages
        ],
        "tools": [{"name": t.name, "parameters": t.parameters} for t in request.tools],
        "output": None if output is None else {"name": output.name,
                                               "json_schema": output.json_schema},
        "settings": {"temperature": settings.temperature, "max_tokens": settings.max_tokens,
                     "seed": settings.seed} | ({"stop": list(settings.stop)} if settings.stop
                                               else {}),  # recordings made before it match
    }


def task_local(canonical: dict[str, Any]) -> dict[str, Any]:
    """The request cut to the system prompt plus the current task's messages.

    The runtime marks a task's input message with ``name="task"``. Keying replay on
    this view makes it independent of what other tasks the agent did before (and
    in which order), so a recorded concurrent pipeline replays whatever the schedule.
    """
    messages = canonical["messages"]
    starts = [i for i, m in enumerate(messages) if m.get("role") == "user"
              and m.get("name") == "task"]
    if not starts:
        return canonical
    head = [m for m in messages[:1] if m.get("role") == "system"]
    return {**canonical, "messages": head + messages[starts[-1]:]}


def _digest(canonical: Mapping[str, Any]) -> str:
    text = json.dumps(canonical, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def request_key(request: ModelRequest) -> str:
    """The sha256 hex digest of the canonical request."""
    return _digest(canonical_request(request))


class RecordingModel:
    """Wraps a model and appends every successful call to a JSON-lines file.

    Several recorders (say one per role) may share a file: a process-wide lock
    numbers the lines in file order.
    """

    def __init__(self, inner: Model, path: str | os.PathLike[str], *,
                 name: str | None = None) -> None:
        self.inner = inner
        self.path = Path(path)
        self.name = name or inner.name
        self.tool_tape = TapeRecorder(self.path)
        """What the MCP tools of the tasks it drives answered, recorded in the same file."""

    def __repr__(self) -> str:
        return f"RecordingModel({self.inner!r}, '{self.path}')"

    async def request(self, request: ModelRequest) -> ModelResponse:
        return await self._record(request, await self.inner.request(request))

    async def request_stream(self, request: ModelRequest, sink: DeltaSink) -> ModelResponse:
        """``request``, streamed when the inner model streams (the same response is
        recorded either way)."""
        if not streams(self.inner):
            return await self.request(request)
        return await self._record(request, await self.inner.request_stream(request, sink))

    async def _record(self, request: ModelRequest, response: ModelResponse) -> ModelResponse:
        canonical = canonical_request(request)
        await asyncio.to_thread(_append_call, self.path, canonical, response)
        return response


def _append_call(path: Path, canonical: dict[str, Any], response: ModelResponse) -> None:
    with APPEND_LOCK:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a+b") as f:
            f.seek(0)
            index = sum(1 for line in f.read().splitlines() if line.startswith(b'{"key"'))
            row = {"key": _digest(canonical), "index": index, "request": canonical,
                   "response": dump_response(response)}
            f.write(json.dumps(row, ensure_ascii=False).encode() + b"\n")


class ReplayMismatchError(UserError):
    """Strict replay got a request the recording does not hold."""

    def __init__(self, message: str, *, key: str, index: int, field: str | None) -> None:
        self.key = key
        self.index = index
        self.field = field
        super().__init__(message)


class ReplayModel:
    """Serves recorded responses offline, keyed by the canonical request's digest.

    With ``strict=True`` an unrecorded request raises :class:`ReplayMismatchError`
    naming the key, the call index and the first field where it differs from the
    nearest recorded request. With ``strict=False`` it gets the next unused response
    in file order instead. With a ``fallback`` model, an unrecorded request is sent
    to it (counted in ``fallbacks``, explained in a warning): a recording made by a
    deterministic script stays usable when the world around it changes a little,
    e.g. another pytest version printing its report differently.
    ``warn_on_fallback=False`` explains the first fallback at debug level instead: for
    a fallback that is the very script the recording was made from (a user can do
    nothing about the difference; a test of the recording catches it).
    """

    def __init__(self, path: str | os.PathLike[str], *, strict: bool = True,
                 name: str = "replay", key: Literal["request", "task"] = "request",
                 fallback: Model | None = None, warn_on_fallback: bool = True,
                 stream: Chunks | None = None) -> None:
        self.path = Path(path)
        self.stream = stream
        self.warn_on_fallback = warn_on_fallback
        self.strict = strict
        self.name = name
        self.key_mode = key
        self.fallback = fallback
        self.fallbacks = 0
        rows = recording_rows(self.path)
        self.recorded = recorded_calls(self.path, rows)
        taped = [r for _, r in rows if isinstance(r, dict) and "mcp" in r]
        self.tool_tape = TapePlayer(self.path, taped, strict=strict and fallback is None
                                    ) if taped else None
        """The recorded MCP tool lists and results: a run it drives reaches no server
        (None: a recording with no tape, whose runs reach their servers as before)."""
        if key == "task":
            # Keep the cut request too: a mismatch is explained against what was keyed.
            self.recorded = [replace(c, request=local, key=_digest(local))
                             for c in self.recorded for local in [task_local(c.request)]]
        self.calls: list[ModelRequest] = []
        self._by_key: dict[str, deque[int]] = {}
        for position, call in enumerate(self.recorded):
            self._by_key.setdefault(call.key, deque()).append(position)
        self._used: set[int] = set()

    def __repr__(self) -> str:
        return f"ReplayModel('{self.path}', strict={self.strict}, name={self.name!r})"

    @property
    def local(self) -> bool:
        """A replay bills nothing, unless its fallback is a hosted model."""
        return self.fallback is None or runs_locally(self.fallback)

    @property
    def remaining(self) -> int:
        """How many recorded responses have not been served."""
        return len(self.recorded) - len(self._used)

    async def request(self, request: ModelRequest) -> ModelResponse:
        index = len(self.calls)
        self.calls.append(request)
        canonical = canonical_request(request)
        if self.key_mode == "task":
            canonical = task_local(canonical)
        key = _digest(canonical)
        queue = self._by_key.get(key)
        if queue:
            position = queue.popleft()
        elif self.fallback is not None:
            self.fallbacks += 1
            if self.fallbacks == 1:
                mismatch = self._mismatch(canonical, key, index,
                                          recorded_before=key in self._by_key)
                say = log.warning if self.warn_on_fallback else log.debug
                say("request not in the recording; asking the fallback model",
                    recording=str(self.path), fallback=self.fallback.name, why=str(mismatch))
            return await self.fallback.request(request)
        elif self.strict:
            raise self._mismatch(canonical, key, index, recorded_before=key in self._by_key)
        else:
            position = self._next_unused(index)
        self._used.add(position)
        return self.recorded[position].response

    async def request_stream(self, request: ModelRequest, sink: DeltaSink) -> ModelResponse:
        """``request``'s answer, told to ``sink`` in pieces when ``stream`` is set: a replayed
        session shows its agents writing, as a live model would (the answer is the same)."""
        response = await self.request(request)
        if self.stream is not None:
            await stream_reply(response, sink, self.stream)
        return response

    def _next_unused(self, index: int) -> int:
        for position in range(len(self.recorded)):
            if position not in self._used:
                self._by_key[self.recorded[position].key].remove(position)
                return position
        raise UserError(f"replay '{self.path}': call {index} asks for a response but all "
                        f"{len(self.recorded)} recorded responses have been served")

    def _mismatch(self, canonical: dict[str, Any], key: str, index: int, *,
                  recorded_before: bool) -> ReplayMismatchError:
        where = f"replay '{self.path}': call {index} (request key {key})"
        fix = ("Re-record the calls, or use ReplayModel(..., strict=False) to serve the "
               "recorded responses in file order.")
        if recorded_before:
            times = sum(1 for call in self.recorded if call.key == key)
            return ReplayMismatchError(
                f"{where} was recorded {times} time(s) and every response has been served. "
                f"{fix}", key=key, index=index, field=None)
        if not self.recorded:
            return ReplayMismatchError(f"{where}: the recording is empty. {fix}",
                                       key=key, index=index, field=None)
        # The same conversation first (longest run of equal leading messages), then
        # the fewest differing fields: the call this one was most likely meant to be.
        nearest = min(self.recorded, key=lambda call: (
            -_shared_messages(call.request, canonical),
            _count_differences(call.request, canonical), abs(call.index - index)))
        diff = _first_difference(nearest.request, canonical, "")
        field, was, now = diff if diff is not None else ("", None, None)
        at, was, now = _around_first_change(was, now)
        return ReplayMismatchError(
            f"{where} has no recorded response. The nearest recorded request (call "
            f"{nearest.index}, key {nearest.key}) differs first at {field or '<root>'}{at}: "
            f"recorded {_show(was)}, now {_show(now)}. {fix}",
            key=key, index=index, field=field)
