"""A shared agent's history (``orchestra worker``: other processes write to it too) holds
each message once when its tasks start together, and they share the reads."""

from __future__ import annotations

import asyncio
from typing import Any

from orchestra._types import Message
from orchestra.runtime.agent_state import AgentState


class Store:
    """The two reads ``AgentState.refresh`` makes; each yields to the loop, as a real
    store's round trip does, so concurrent callers interleave."""

    def __init__(self) -> None:
        self.messages = [Message("user", str(i), agent_id="r/a", seq=i + 1, task_id=f"t{i}")
                         for i in range(5)]
        self.reads = 0

    async def agent_infos(self, run_id: str) -> list[Any]:
        await asyncio.sleep(0)
        return []

    async def get_messages(self, agent_id: str, *, after_seq: int = 0,
                           limit: int | None = None) -> list[Message]:
        self.reads += 1
        await asyncio.sleep(0)
        return [m for m in self.messages if m.seq > after_seq]


async def test_tasks_starting_together_see_each_message_once() -> None:
    store = Store()
    agent = AgentState("r/a", "a", "r", exclusive=False)
    refresh = agent.refresh(store, with_compactions=False)  # type: ignore[arg-type]
    await asyncio.gather(refresh, *(agent.refresh(store, with_compactions=False)  # type: ignore[arg-type]
                                    for _ in range(7)))
    assert [m.seq for m in agent.history] == [1, 2, 3, 4, 5]
    assert store.reads == 2  # the first task's read, then one for the seven that waited on it
    store.messages.append(Message("user", "5", agent_id="r/a", seq=6, task_id="t5"))
    await agent.refresh(store, with_compactions=False)  # type: ignore[arg-type]
    assert [m.seq for m in agent.history] == [1, 2, 3, 4, 5, 6]  # a later task reads again
    assert store.reads == 3


async def test_an_exclusive_agent_loads_once_when_its_first_tasks_start_together() -> None:
    store = Store()
    agent = AgentState("r/a", "a", "r")
    await asyncio.gather(*(agent.refresh(store, with_compactions=False)  # type: ignore[arg-type]
                           for _ in range(4)))
    assert [m.seq for m in agent.history] == [1, 2, 3, 4, 5]
    assert store.reads == 1
