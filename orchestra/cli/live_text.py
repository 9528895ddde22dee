"""What each agent is writing, read from the run's ``model.delta`` events.

``LiveText`` follows each task's current model call: its text (and its tool calls'
arguments, shown as ``tool(arguments``), the last of it kept for a redrawn terminal
line (one per role: its latest call; a role may write for several tasks at once), and
its finished lines handed out for a plain log (``role | line``). A call's text ends
when its step completes (or fails), or when a new call of the same task and step begins
instead (a process died mid-answer, or the adapter tried again): that text is marked
interrupted.
"""

from __future__ import annotations

from dataclasses import dataclass

from orchestra._types import DELTA_EVENT, Event

_TAIL = 4000  # characters of a call kept for its terminal line
# a model's text never drives the terminal: control characters (an escape sequence, a
# carriage return) are shown as a space; newlines end lines
_CONTROLS = {c: " " for c in [*range(0x20), 0x7F, *range(0x80, 0xA0)] if c != 0x0A}


@dataclass
class _Call:
    key: tuple[object, ...]
    """task, retry, step, attempt, try"""
    tail: str = ""
    line: str = ""
    """The current line, not printed yet (plain mode)."""
    tool: int | None = None
    """The tool call whose arguments came last."""
    seen: int = 0
    """When it last wrote (a count of deltas): a role's latest call is on its line."""


def delta_piece(data: dict[str, object], tool: int | None,
                line_start: bool = True) -> tuple[str, int | None]:
    """The text one delta event adds, with ``name(`` on a line of its own before a new
    tool call's arguments (``line_start``: what came before ended a line); and the tool
    call it ends in."""
    parts = [str(data.get("text") or "")]
    for call in data.get("calls") or ():  # type: ignore[attr-defined]
        index, name, arguments = call
        if index != tool:
            done = "".join(parts)
            parts.append(f"{name}(" if (done.endswith("\n") or (not done and line_start))
                         else f"\n{name}(")
            tool = index
        parts.append(str(arguments))
    return "".join(parts), tool


class LiveText:
    """The live text of each role's calls (one current model call per task)."""

    def __init__(self) -> None:
        self.calls: dict[tuple[str, object], _Call] = {}
        """(role, task) -> its current call"""
        self._deltas = 0

    def apply(self, e: Event) -> list[str]:
        """Take one event; returns the finished lines to print in a plain log."""
        data = e.data if isinstance(e.data, dict) else {}
        if e.kind in ("step.completed", "step.failed"):
            return self._end(data)
        if e.kind != DELTA_EVENT:
            return []
        role = str(data.get("role", "?"))
        key = (data.get("task"), data.get("retry"), data.get("step"), data.get("attempt"),
               data.get("try", 1))
        out: list[str] = []
        call = self.calls.get((role, key[0]))
        if call is None or call.key != key:
            if call is not None:
                if call.line:
                    out.append(f"{role} | {call.line}")
                if call.key[:3] == key[:3]:  # the same step again: this one never finished
                    out.append(f"{role} | [attempt {call.key[3]} interrupted: the call "
                               f"was made again]")
            call = self.calls[role, key[0]] = _Call(key)
        self._deltas += 1
        call.seen = self._deltas
        piece, call.tool = delta_piece(data, call.tool, not call.line)
        piece = piece.translate(_CONTROLS)
        call.tail = (call.tail + piece)[-_TAIL:]
        *finished, call.line = (call.line + piece).split("\n")
        out += [f"{role} | {line}" for line in finished]
        return out

    def _end(self, data: dict[str, object]) -> list[str]:
        """A step completed (or failed): its call's text ends; its last line is done."""
        for (role, task), call in self.calls.items():
            if task == data.get("task") and call.key[2] == data.get("step"):
                del self.calls[role, task]
                return [f"{role} | {call.line}"] if call.line else []
        return []

    def active(self) -> dict[str, str]:
        """Each role still writing, and the end of what it wrote (its latest call), on one
        line."""
        latest: dict[str, _Call] = {}
        for (role, _), call in self.calls.items():
            if role not in latest or call.seen > latest[role].seen:
                latest[role] = call
        return {role: call.tail.replace("\n", " ⏎ ") for role, call in sorted(latest.items())}
