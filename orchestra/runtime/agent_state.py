"""An agent's in-memory view of its durable history.

The store is the truth; this cache spares re-reading a long history at every
task. When this process is the agent's only writer (``exclusive``, the default
for one coordinator) it is loaded once and then kept current from this process's
own commits, whose message seqs it predicts exactly (the store assigns
``max(seq) + 1`` in commit order, and commits resolve in that order). When other
processes may serve the same run, it re-reads new messages at every task.

The agent's token and cost totals so far (``agent_infos``, a read of the whole run's
journal) are loaded only for a role with a per-agent cap: nothing else reads them, and
a worker paid that read for every agent of every run it drove.

Tasks of one agent start concurrently (a claim takes up to ``concurrency`` at once), so
reads are serialized and shared: concurrent reads from the same ``last_seq`` each
appended the same messages (a shared agent's history held each message about three
times, and the model saw them repeated), and every read decoded them again.
"""

from __future__ import annotations

import asyncio
import bisect
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

from orchestra._types import AgentId, CompactionRecord, Message
from orchestra.compaction import message_tokens
from orchestra.store.protocol import AgentHistory

FEEDBACK = "feedback"
"""``name`` of a user message telling the model why its last reply was unusable."""
ATTEMPT_FAILED = "attempt_failed"
"""``name`` of the message closing a failed task attempt."""


def visible_history(history: Sequence[Message]) -> list[Message]:
    """``history`` without what later tasks should not see: every message of a failed
    attempt (up to its task's last failure marker), and each unusable reply with the
    feedback on it. They stay in the store; a weak model shown them repeats them."""
    failed = {m.task_id: i for i, m in enumerate(history) if m.name == ATTEMPT_FAILED}
    out: list[Message] = []
    for i, m in enumerate(history):
        if m.task_id in failed and i <= failed[m.task_id]:
            continue
        if m.name == FEEDBACK:
            last = out[-1] if out else None
            if (last is not None and last.role == "assistant" and not last.tool_calls
                    and last.task_id == m.task_id):
                out.pop()
            continue
        out.append(m)
    return out


def agent_id_for(run_id: str, role: str) -> str:
    """Agents are one per role per run; their id is derived, never invented."""
    return str(AgentId(run_id, role))


@dataclass(slots=True)
class AgentState:
    """Messages (oldest first), the latest summary and token totals of one agent."""

    agent_id: str
    role: str
    run_id: str
    exclusive: bool = True
    history: list[Message] = field(default_factory=list)
    summary: CompactionRecord | None = None
    last_seq: int = 0
    tokens_used: int = 0
    cost_used: float = 0.0
    loaded: bool = False
    _tokens: dict[int, int] = field(default_factory=dict)
    _task_ids: set[str] = field(default_factory=set)
    _first_seq: dict[str, int] = field(default_factory=dict)
    _running: dict[str, list[Message]] = field(default_factory=dict)
    _visible: tuple[int, list[Message]] = (0, [])
    _hidden: bool = False  # some message of the history is one later tasks do not see
    _scanned: int = 0  # how much of the history was looked at for such messages
    _reading: asyncio.Lock = field(default_factory=asyncio.Lock)
    _reads: tuple[int, int] = (0, 0)  # reads begun, and the latest begun of those ended

    async def refresh(self, store: AgentHistory, *, with_compactions: bool,
                      with_totals: bool = True) -> None:
        """Load the history once (or, when shared, pull what others wrote since).

        ``with_totals``: at the first load, also read what the agent spent so far
        (``tokens_used``, ``cost_used``); only a per-agent cap needs it, and a role's caps
        are fixed, so its first task decides for all.
        One read at a time; a caller that finds a read begun after it asked already
        ended takes that read's result (it is at least as recent as its own would be)."""
        if self.loaded and self.exclusive:
            return
        asked = self._reads[0]
        async with self._reading:
            if self._reads[1] > asked or (self.loaded and self.exclusive):
                return
            began = self._reads[0] + 1
            self._reads = (began, self._reads[1])
            await self._read(store, with_compactions, with_totals)
            self._reads = (self._reads[0], began)

    async def _read(self, store: AgentHistory, with_compactions: bool, with_totals: bool) -> None:
        if not self.loaded and with_totals:
            for info in await store.agent_infos(self.run_id):
                if info.agent_id == self.agent_id:
                    self.tokens_used = info.tokens_in + info.tokens_out
                    self.cost_used = info.cost
        new = await store.get_messages(self.agent_id, after_seq=self.last_seq)
        if new:
            self.history.extend(new)
            self.last_seq = new[-1].seq
            self._joined(new)
        if with_compactions:
            records = await store.get_compactions(self.agent_id)
            self.summary = records[-1] if records else None
        self.loaded = True

    def committed(self, task_id: str, messages: Sequence[Message]) -> None:
        """Note messages this process just committed for ``task_id`` (in commit order)."""
        if not self.exclusive or not messages:
            return
        held = self._running.setdefault(task_id, [])
        agent_id, seq = self.agent_id, self.last_seq
        for m in messages:  # built directly: ``dataclasses.replace`` costs twice as much
            seq += 1
            held.append(Message(m.role, m.content, m.tool_calls, m.tool_call_id, m.name,
                                agent_id, seq, task_id))
        self.last_seq = seq

    def spent(self, tokens: int, cost: float) -> None:
        """Add what a task attempt spent to the agent's totals (its per-agent caps)."""
        self.tokens_used += tokens
        self.cost_used += cost

    def task_done(self, task_id: str) -> None:
        """A task ended: its messages join the history other tasks see."""
        held = self._running.pop(task_id, [])
        if not held:
            return
        ordered = bool(not self.history or self.history[-1].seq < held[0].seq)
        self.history.extend(held)
        self._joined(held)
        if not ordered:  # tasks of one agent ran concurrently: keep seq order
            self.history.sort(key=lambda m: m.seq)

    def _joined(self, messages: Sequence[Message]) -> None:
        for m in messages:
            if m.task_id and m.task_id not in self._task_ids:
                self._task_ids.add(m.task_id)
                self._first_seq[m.task_id] = m.seq

    def prior(self, task_id: str) -> list[Message]:
        """History from other tasks (this task's own messages are rebuilt by replay),
        without failed attempts and unusable replies (:func:`visible_history`).

        The history is in seq order and a task's messages all come after its first
        one, so only that tail is filtered, not the agent's whole history.
        """
        n = len(self.history)
        if self._visible[0] != n:  # history only grows: length is a version
            # only the messages added since the last look: a turn must not cost in
            # proportion to how long the agent has been talking
            start = self._scanned if self._scanned <= n else 0
            self._hidden = self._hidden or any(
                m.name in _HIDING for m in itertools.islice(self.history, start, None))
            self._scanned = n
            self._visible = (n, visible_history(self.history) if self._hidden else self.history)
        seen = self._visible[1]
        if task_id not in self._task_ids:
            return seen
        first = self._first_seq.get(task_id, 0)
        at = bisect.bisect_left(seen, first, key=_seq)
        return seen[:at] + [m for m in seen[at:] if m.task_id != task_id]

    def tokens(self, message: Message) -> int:
        """Token estimate of a message, cached for stored ones."""
        if not message.seq:
            return message_tokens(message)
        cached = self._tokens.get(message.seq)
        if cached is None:
            cached = self._tokens[message.seq] = message_tokens(message)
        return cached


_HIDING = (FEEDBACK, ATTEMPT_FAILED)


def _seq(message: Message) -> int:
    return message.seq
