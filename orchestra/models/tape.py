"""What a recorded run's tools answered, kept in its recording beside the model calls, so
that a run driven by ``replay:`` models replays offline: its MCP servers' tool lists and
call results come from the recording, and no server is started.

A :class:`~orchestra.models.record.RecordingModel` offers a :class:`TapeRecorder` and a
:class:`~orchestra.models.record.ReplayModel` a :class:`TapePlayer` (``model.tool_tape``);
the runtime hands the tape of a task's model to the task's MCP tools. Lines of a tape
carry an ``"mcp"`` field (``"tools"`` or ``"call"``) and no ``"key"``; a recording's
reader skips them::

    {"mcp": "tools", "server": "git", "tools": [{"name": ..., "inputSchema": ...}, ...]}
    {"mcp": "call", "server": "git", "tool": "git_status", "arguments": {...},
     "output": {"content": ..., "is_error": false}}
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections import deque
from pathlib import Path
from typing import Any, Protocol

from orchestra._errors import UserError

APPEND_LOCK = threading.Lock()
"""Held while a line is appended to a recording (model calls and tape lines alike)."""


class ToolTape(Protocol):
    """What a task's MCP tools read or write when its model records or replays."""

    @property
    def replaying(self) -> bool:
        """True: tool lists and results come from the tape and no server is reached."""
        ...

    def tools(self, server: str) -> list[dict[str, Any]] | None:
        """The recorded tool list of ``server`` (None: the tape holds none)."""
        ...

    def result(self, server: str, tool: str, arguments: dict[str, Any]
               ) -> dict[str, Any] | None:
        """The next recorded output of this call (None: the tape holds none left)."""
        ...

    async def note_tools(self, server: str, tools: list[dict[str, Any]]) -> None:
        """Record ``server``'s tool list as a task was offered it."""
        ...

    async def note_call(self, server: str, tool: str, arguments: dict[str, Any],
                        output: dict[str, Any]) -> None:
        """Record what one call answered."""
        ...


def append_line(path: Path, row: dict[str, Any]) -> None:
    """Append one JSON line to a recording (blocking: call it off the event loop)."""
    with APPEND_LOCK:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("ab") as f:
            f.write(json.dumps(row, ensure_ascii=False).encode() + b"\n")


def _call_key(server: str, tool: str, arguments: dict[str, Any]) -> str:
    return json.dumps([server, tool, arguments], sort_keys=True, ensure_ascii=False)


class TapeRecorder:
    """Appends the tool lists and call results of the tasks a recording model drives."""

    replaying = False

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def tools(self, server: str) -> list[dict[str, Any]] | None:
        return None

    def result(self, server: str, tool: str, arguments: dict[str, Any]
               ) -> dict[str, Any] | None:
        return None

    async def note_tools(self, server: str, tools: list[dict[str, Any]]) -> None:
        await asyncio.to_thread(append_line, self.path,
                                {"mcp": "tools", "server": server, "tools": tools})

    async def note_call(self, server: str, tool: str, arguments: dict[str, Any],
                        output: dict[str, Any]) -> None:
        await asyncio.to_thread(append_line, self.path, {
            "mcp": "call", "server": server, "tool": tool, "arguments": arguments,
            "output": output})


class TapePlayer:
    """Serves a recording's tool lists and call results, in the order they were made.

    ``strict`` (the replay model's own strictness): a call the tape does not hold is an
    error naming it; otherwise the call goes to its server, which must then be running.
    """

    replaying = True

    def __init__(self, path: str | os.PathLike[str], rows: list[dict[str, Any]], *,
                 strict: bool) -> None:
        self.path = Path(path)
        self.strict = strict
        self._tools: dict[str, list[dict[str, Any]]] = {}
        self._calls: dict[str, deque[dict[str, Any]]] = {}
        for row in rows:
            if row.get("mcp") == "tools":
                self._tools[str(row["server"])] = list(row["tools"])
            elif row.get("mcp") == "call":
                key = _call_key(str(row["server"]), str(row["tool"]), dict(row["arguments"]))
                self._calls.setdefault(key, deque()).append(dict(row["output"]))

    def tools(self, server: str) -> list[dict[str, Any]] | None:
        listed = self._tools.get(server)
        if listed is None and self.strict:
            raise UserError(f"replay '{self.path}': the recording holds no tool list of MCP "
                            f"server {server!r}; record the run again with this server "
                            "declared, or replay it non-strictly with the server running")
        return listed

    def result(self, server: str, tool: str, arguments: dict[str, Any]
               ) -> dict[str, Any] | None:
        queue = self._calls.get(_call_key(server, tool, arguments))
        if queue:
            return queue.popleft()
        if self.strict:
            shown = json.dumps(arguments, sort_keys=True)[:300]
            raise UserError(f"replay '{self.path}': the recording holds no (unused) call of "
                            f"MCP tool {tool!r} of server {server!r} with arguments {shown}; "
                            "the run differs from the recorded one there")
        return None

    async def note_tools(self, server: str, tools: list[dict[str, Any]]) -> None:
        return None

    async def note_call(self, server: str, tool: str, arguments: dict[str, Any],
                        output: dict[str, Any]) -> None:
        return None


def tape_of(model: object) -> ToolTape | None:
    """The tool tape a model offers (a recording or replaying model), else None."""
    tape: ToolTape | None = getattr(model, "tool_tape", None)
    return tape
