"""What the board's pages show, read from the store: plain data for the templates.

Everything here is a read; pages never write. Reads are bounded (a page of
events or messages, a capped task list) so a long run renders as fast as a
short one.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from orchestra._errors import UserError
from orchestra._types import AgentInfo, Message, Run, Task
from orchestra.compaction import CompactionPolicy, SummaryRequest, View
from orchestra.coordinator.pipeline import Pipeline, load_pipeline
from orchestra.runtime.agent_state import agent_id_for
from orchestra.store.protocol import AgentHistory

MAX_TASKS = 300
"""Newest tasks shown in a run's timeline (the count says how many exist)."""
PAGE = 100
"""Messages per page of an agent's history."""
VIEW_SHOWN = 200
"""Newest messages of a model's view listed beside the history."""


def age(then: float, now: float | None = None) -> str:
    """``42s``, ``5m``, ``3h``, ``2d``: how long ago."""
    secs = max(0.0, (now if now is not None else time.time()) - then)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if secs >= size:
            return f"{int(secs // size)}{unit}"
    return f"{int(secs)}s"


def pretty(value: Any) -> str:
    """JSON for people: indented, non-ASCII kept."""
    if isinstance(value, str):
        text = value
        try:
            value = json.loads(text)
        except ValueError:
            return text
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def short(value: Any, limit: int = 120) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False,
                                                           default=str)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class Pipelines:
    """The runs' pipelines, loaded once per run (a role's compaction policy is
    declared in code, not stored); a pipeline that cannot load here says why."""

    def __init__(self) -> None:
        self._loaded: dict[str, Pipeline | str] = {}

    def get(self, run: Run) -> Pipeline | str:
        found = self._loaded.get(run.id)
        if found is None:
            try:
                found = load_pipeline(run.pipeline, run.input)
            except (UserError, Exception) as exc:  # user code: anything may go wrong
                found = f"{type(exc).__name__}: {exc}"
            if len(self._loaded) > 256:
                self._loaded.clear()
            self._loaded[run.id] = found
        return found

    def policy(self, run: Run, role: str) -> CompactionPolicy | str:
        pipeline = self.get(run)
        if isinstance(pipeline, str):
            return f"unknown (the pipeline does not load here: {pipeline})"
        for r in pipeline.roles:
            if r.name == role:
                return type(r).compaction
        return f"unknown (the pipeline has no role {role!r})"


def describe(policy: CompactionPolicy | str) -> str:
    if isinstance(policy, str):
        return policy
    params = ", ".join(f"{k}={v!r}" for k, v in vars(policy).items() if not k.startswith("_"))
    return f"{type(policy).__name__}({params})"


@dataclass(frozen=True, slots=True)
class Lane:
    """One agent as the run page shows it."""

    role: str
    status: str
    task: Task | None
    info: AgentInfo | None
    compaction: str
    summaries: int
    summarised_to: int | None


def _lane_status(tasks: list[Task]) -> tuple[str, Task | None]:
    for status, label in (("running", "working"), ("waiting", "waiting for approval"),
                          ("pending", "queued")):
        found = [t for t in tasks if t.status == status]
        if found:
            return label, found[-1]
    if any(t.status == "failed" for t in tasks[-1:]):
        return "failed", tasks[-1]
    return ("done" if tasks else "idle"), None


async def lanes(store: AgentHistory, pipelines: Pipelines, run: Run,
                tasks: list[Task]) -> list[Lane]:
    infos = {a.role: a for a in await store.agent_infos(run.id)}
    roles = list(dict.fromkeys([t.role for t in tasks] + list(infos)))
    pipeline = pipelines.get(run)
    if not isinstance(pipeline, str):  # declared order first: architect before coder
        declared = [r.name for r in pipeline.roles]
        roles = [r for r in declared if r in roles] + [r for r in roles if r not in declared]
    result = []
    for role in roles:
        mine = [t for t in tasks if t.role == role]
        status, current = _lane_status(mine)
        records = await store.get_compactions(agent_id_for(run.id, role)) \
            if role in infos else []
        result.append(Lane(role, status, current, infos.get(role),
                           describe(pipelines.policy(run, role)), len(records),
                           records[-1].last_seq if records else None))
    return result


@dataclass(frozen=True, slots=True)
class TimelineItem:
    task: Task
    depth: int
    offset: str


def timeline(run: Run, tasks: list[Task]) -> list[TimelineItem]:
    """Tasks in creation order, indented under the task that caused them."""
    by_id = {t.id: t for t in tasks}
    depth: dict[str, int] = {}

    def depth_of(t: Task) -> int:
        if t.id not in depth:
            parent = by_id.get(t.parent_id or "")
            depth[t.id] = 0 if parent is None or parent is t else min(depth_of(parent) + 1, 6)
        return depth[t.id]

    shown = sorted(tasks, key=lambda t: (t.created_at, t.id))[-MAX_TASKS:]
    return [TimelineItem(t, depth_of(t), f"+{age(run.created_at, t.created_at)}")
            for t in shown]


@dataclass(slots=True)
class AgentView:
    """An agent's stored history (one page) beside what its model sees."""

    role: str
    policy: str
    total: int
    page: list[Message]
    page_first: int
    in_view: set[int] = field(default_factory=set)
    summarised: tuple[int, int] | None = None
    summary: str | None = None
    pending_summary: tuple[int, int] | None = None
    view: list[Message] = field(default_factory=list)
    view_total: int = 0

    def mark(self, seq: int) -> str:
        if seq in self.in_view:
            return "in view"
        if self.summarised and self.summarised[0] <= seq <= self.summarised[1]:
            return "summarised"
        return "dropped"


async def agent_view(store: AgentHistory, pipelines: Pipelines, run: Run, role: str,
                     before: int | None) -> AgentView:
    """``before``: show the page of messages ending just before this seq (newest page
    when ``None``)."""
    agent_id = agent_id_for(run.id, role)
    history = await store.get_messages(agent_id)
    total = len(history)
    end = total if before is None else max(0, min(total, before - 1))
    start = max(0, end - PAGE)
    policy = pipelines.policy(run, role)
    result = AgentView(role, describe(policy), total, history[start:end], start + 1)
    if isinstance(policy, str) or not history:
        result.in_view = {m.seq for m in history} if not isinstance(policy, str) else set()
        return result
    records = await store.get_compactions(agent_id) if policy.summarizes else []
    latest = records[-1] if records else None
    pinned = next((m for m in reversed(history) if m.role == "user" and m.name == "task"),
                  None)
    seen = policy.view(history, summary=latest, pinned=pinned)
    if isinstance(seen, SummaryRequest):  # due at the next model call: show it as is
        result.pending_summary = (seen.messages[0].seq, seen.messages[-1].seq) \
            if seen.messages else None
        seen = View(tuple(history), latest)
    summary = seen.summary
    if summary is not None:
        result.summarised = (summary.first_seq, summary.last_seq)
        result.summary = summary.summary
    result.in_view = {m.seq for m in seen.messages}
    result.view_total = len(seen.messages)
    result.view = list(seen.messages[-VIEW_SHOWN:])
    return result
