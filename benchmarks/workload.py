"""The fixed benchmark workload (shared/bench/WORKLOAD.md), free of any framework.

Every side (the plain-Python floor, LangGraph, orchestra) runs exactly these calls:

* **Text.** :func:`ascii_text` gives a deterministic ASCII string of an exact length.
* **Requests.** :func:`build_request` makes the user message for a :class:`Task`:
  200 bytes of content (500 for the S3 architect). The content starts with a header
  such as ``[coder module=mod1 version=2]`` from which the fake model reads the task,
  so a framework only has to pass the message list through.
* **Replies.** :class:`FakeModel` answers per role (see ``WORKLOAD.md``) after
  ``await asyncio.sleep(L)`` when ``L > 0``; it counts calls and messages sent, and has
  hooks for the S4 kill points.
* **Pipeline driver.** The architect is called once and plans 4 modules; then for
  each module: coder v1 -> reviewer v1 (rejects) -> coder v2 -> reviewer v2
  (approves). :func:`next_task` is that routing, as a pure function of the last task
  and its reply. Every agent keeps its own history: a call sends ``history +
  [request]``, then ``request`` and ``reply`` are appended. At the end the histories
  hold 2 / 16 / 16 messages and all modules are approved: :func:`check_final_state`.
* **Floor.** :func:`run_plain_pipeline` does the same calls in plain Python with no
  persistence.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypedDict

Role = Literal["architect", "coder", "reviewer"]
Message = dict[str, Any]
"""A chat message: ``{"role": "user" | "assistant", "content" | "text": str, ...}``."""

MODULES: tuple[str, ...] = ("mod0", "mod1", "mod2", "mod3")
CALLS_PER_PIPELINE = 17
REQUEST_BYTES = 200
REPLY_TEXT_BYTES = 200
S3_REQUEST_BYTES = 500
S3_REPLY_TEXT_BYTES = 500
FINAL_HISTORY_LENGTHS: Mapping[Role, int] = {"architect": 2, "coder": 16, "reviewer": 16}
MESSAGES_SENT_PER_PIPELINE = 1 + 2 * sum(2 * k + 1 for k in range(8))
"""Messages the model receives in one pipeline when every call sends its whole history
(architect 1; coder and reviewer 1 + 3 + ... + 15 = 64 each): 129."""

_FILLER = (
    "The quick brown fox jumps over the lazy dog; pack my box with five dozen liquor "
    "jugs. Sphinx of black quartz, judge my vow. 0123456789. "
)


def ascii_text(n: int, tag: str = "") -> str:
    """A deterministic ASCII string of exactly ``n`` characters (= bytes), starting with
    ``tag`` when it fits."""
    if n < 0:
        raise ValueError(f"length must be >= 0, got {n}")
    head = f"{tag} " if tag else ""
    reps = n // len(_FILLER) + 1
    return (head + _FILLER * reps)[:n]


class Task(TypedDict):
    """One model call of the workload: who is asked, about what."""

    role: Role
    module: str | None
    version: int | None
    turn: int | None


def architect_task() -> Task:
    return {"role": "architect", "module": None, "version": None, "turn": None}


def work_task(role: Role, module: str, version: int) -> Task:
    return {"role": role, "module": module, "version": version, "turn": None}


def s3_task(turn: int) -> Task:
    return {"role": "architect", "module": None, "version": None, "turn": turn}


def _header(task: Task) -> str:
    parts: list[str] = [task["role"]]
    if task["module"] is not None:
        parts.append(f"module={task['module']}")
    if task["version"] is not None:
        parts.append(f"version={task['version']}")
    if task["turn"] is not None:
        parts.append(f"turn={task['turn']}")
    return "[" + " ".join(parts) + "]"


_HEADER_RE = re.compile(
    r"^\[(?P<role>architect|coder|reviewer)(?: module=(?P<module>\w+))?"
    r"(?: version=(?P<version>\d+))?(?: turn=(?P<turn>\d+))?\]"
)


def build_request(task: Task) -> Message:
    """The user message for ``task``: 200 bytes of content, 500 for an S3 turn."""
    size = S3_REQUEST_BYTES if task["turn"] is not None else REQUEST_BYTES
    return {"role": "user", "content": ascii_text(size, _header(task))}


def parse_request(message: Message) -> Task:
    """Read the task back from a request made by :func:`build_request`."""
    match = _HEADER_RE.match(str(message.get("content", "")))
    if match is None:
        raise ValueError(f"not a workload request: {str(message.get('content'))[:60]!r}")
    version, turn = match["version"], match["turn"]
    return {
        "role": match["role"],  # type: ignore[typeddict-item]
        "module": match["module"],
        "version": int(version) if version is not None else None,
        "turn": int(turn) if turn is not None else None,
    }


def fake_reply(task: Task) -> Message:
    """The fixed structured reply of the fake model for ``task``."""
    role, module, version, turn = task["role"], task["module"], task["version"], task["turn"]
    if turn is not None:
        text = ascii_text(S3_REPLY_TEXT_BYTES, f"turn {turn}")
        return {"role": "assistant", "agent": role, "turn": turn, "text": text}
    if role == "architect":
        text = ascii_text(REPLY_TEXT_BYTES, "plan")
        return {"role": "assistant", "agent": role, "modules": list(MODULES), "text": text}
    if module is None or version is None:
        raise ValueError(f"{role} task needs a module and a version: {task}")
    reply: Message = {"role": "assistant", "agent": role, "module": module, "version": version}
    if role == "reviewer":
        reply["approved"] = version >= 2
    reply["text"] = ascii_text(REPLY_TEXT_BYTES, f"{role} {module} v{version}")
    return reply


Hook = Callable[[int], None]


@dataclass
class FakeModel:
    """The in-process fake model. ``await model.complete(messages)`` answers the last
    message (a workload request) after sleeping ``latency`` seconds when it is > 0.

    S4 support: ``on_enter(n)`` runs when call ``n`` is entered, before it is issued
    (the "next" kill point); ``on_return(n)`` runs inside call ``n`` right after the
    reply is produced (the "return" kill point). With ``call_log`` set, every issued
    call appends ``enter N <monotonic>`` and, once answered, ``return N <monotonic>``,
    each flushed and fsynced so a SIGKILL cannot lose it.
    """

    latency: float = 0.0
    call_log: Path | None = None
    on_enter: Hook | None = None
    on_return: Hook | None = None
    calls: int = 0
    messages_sent: int = 0
    entered_at: list[float] = field(default_factory=list)

    async def complete(self, messages: Sequence[Message]) -> Message:
        n = self.calls + 1
        if self.on_enter is not None:
            self.on_enter(n)
        self.calls = n
        self.messages_sent += len(messages)
        self.entered_at.append(time.monotonic())
        self._log("enter", n)
        task = parse_request(messages[-1])
        if self.latency > 0:
            await asyncio.sleep(self.latency)
        reply = fake_reply(task)
        self._log("return", n)
        if self.on_return is not None:
            self.on_return(n)
        return reply

    def _log(self, what: str, n: int) -> None:
        if self.call_log is None:
            return
        # Blocking write + fsync on purpose: the line must survive a SIGKILL right after.
        with open(self.call_log, "a", encoding="ascii") as f:
            f.write(f"{what} {n} {time.monotonic():.6f}\n")
            f.flush()
            os.fsync(f.fileno())


def next_task(task: Task, reply: Message) -> Task | None:
    """The pipeline driver: the call after ``task`` answered by ``reply``, or None at
    the end."""
    role = task["role"]
    if role == "architect":
        return work_task("coder", reply["modules"][0], 1)
    module, version = task["module"], task["version"]
    if module is None or version is None:
        raise ValueError(f"{role} task needs a module and a version: {task}")
    if role == "coder":
        return work_task("reviewer", module, version)
    if not reply["approved"]:
        return work_task("coder", module, version + 1)
    index = MODULES.index(module)
    return work_task("coder", MODULES[index + 1], 1) if index + 1 < len(MODULES) else None


class StateCheckError(AssertionError):
    """A pipeline finished in a state the workload does not allow."""


def check_final_state(
    histories: Mapping[str, Sequence[Message]], approved: Mapping[str, bool]
) -> None:
    """Raise :class:`StateCheckError` unless the histories hold 2 / 16 / 16 messages,
    alternating request and reply, and all 4 modules are approved."""
    for role, expected in FINAL_HISTORY_LENGTHS.items():
        history = histories.get(role, ())
        if len(history) != expected:
            raise StateCheckError(f"{role} history has {len(history)} messages, want {expected}")
        roles = [m.get("role") for m in history]
        if roles != ["user", "assistant"] * (expected // 2):
            raise StateCheckError(f"{role} history does not alternate request/reply: {roles}")
    if dict(approved) != dict.fromkeys(MODULES, True):
        raise StateCheckError(f"approvals are {dict(approved)}, want all of {list(MODULES)}")
    last_reviews = [m for m in histories["reviewer"] if m.get("role") == "assistant"][1::2]
    if not all(m.get("approved") for m in last_reviews):
        raise StateCheckError("a module's final review is not an approval")


def approvals_from(reviewer_history: Sequence[Message]) -> dict[str, bool]:
    """The latest review of each module, read from the reviewer's history."""
    approved: dict[str, bool] = {}
    for message in reviewer_history:
        if message.get("role") == "assistant":
            approved[message["module"]] = bool(message["approved"])
    return approved


@dataclass
class PipelineResult:
    histories: dict[str, list[Message]]
    approved: dict[str, bool]

    def check(self) -> None:
        check_final_state(self.histories, self.approved)


async def run_plain_pipeline(model: FakeModel) -> PipelineResult:
    """The floor: the pipeline's 17 calls in plain Python, no framework, no persistence."""
    histories: dict[str, list[Message]] = {"architect": [], "coder": [], "reviewer": []}
    approved: dict[str, bool] = {}
    task: Task | None = architect_task()
    while task is not None:
        history = histories[task["role"]]
        request = build_request(task)
        reply = await model.complete([*history, request])
        history += [request, reply]
        if task["role"] == "reviewer":
            approved[reply["module"]] = reply["approved"]
        task = next_task(task, reply)
    return PipelineResult(histories, approved)
