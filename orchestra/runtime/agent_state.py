"""An agent's in-memory view of its durable history, refreshed from the store.

The store is the truth; this cache spares re-reading a long history at every
task. At each task start it fetches only messages newer than it has seen.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from orchestra._store.protocol import Blackboard
from orchestra._types import CompactionRecord, Message
from orchestra.compaction import message_tokens


def agent_id_for(run_id: str, role: str) -> str:
    """Agents are one per role per run; their id is derived, never invented."""
    return f"{run_id}/{role}"


@dataclass(slots=True)
class AgentState:
    """Messages (oldest first), the latest summary and token totals of one agent."""

    agent_id: str
    role: str
    run_id: str
    history: list[Message] = field(default_factory=list)
    summary: CompactionRecord | None = None
    last_seq: int = 0
    tokens_used: int = 0
    _tokens: dict[int, int] = field(default_factory=dict)
    _task_ids: set[str] = field(default_factory=set)
    loaded: bool = False

    async def refresh(self, store: Blackboard, *, with_compactions: bool) -> None:
        """Pull messages (and summaries) written since the last refresh."""
        if not self.loaded:
            infos = await store.agent_infos(self.run_id)
            for info in infos:
                if info.agent_id == self.agent_id:
                    self.tokens_used = info.tokens_in + info.tokens_out
            self.loaded = True
        new = await store.get_messages(self.agent_id, after_seq=self.last_seq)
        if new:
            self.history.extend(new)
            self._task_ids.update(m.task_id for m in new if m.task_id)
            self.last_seq = new[-1].seq
        if with_compactions:
            records = await store.get_compactions(self.agent_id)
            self.summary = records[-1] if records else None

    def prior(self, task_id: str) -> list[Message]:
        """History from other tasks (this task's own messages are rebuilt by replay)."""
        if task_id not in self._task_ids:
            return self.history
        return [m for m in self.history if m.task_id != task_id]

    def tokens(self, message: Message) -> int:
        """Token estimate of a message, cached for stored ones."""
        if not message.seq:
            return message_tokens(message)
        cached = self._tokens.get(message.seq)
        if cached is None:
            cached = self._tokens[message.seq] = message_tokens(message)
        return cached
