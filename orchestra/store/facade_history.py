"""Agents' histories and the event log, written once (see ``facade``); reading a
history whole and ``follow`` are each backend's own (``store_history``)."""

from __future__ import annotations

from collections.abc import Sequence

from orchestra._types import JSON, AgentInfo, CompactionRecord, Event, Message
from orchestra.store.backend import C, X
from orchestra.store.facade import Facade


class HistoryFacade(Facade[X, C]):
    """Mixed into each backend's store class."""

    async def search_messages(self, agent_id: str, text: str, *,
                              limit: int = 10) -> list[Message]:
        """Messages holding any word of ``text`` (case-insensitive), most words matched
        first, then newest. A scan of one agent's history (messages have no text index)."""
        return await self._read(lambda c: self._sql.board_reads.search_messages(
            c, agent_id, text, limit))

    async def get_compactions(self, agent_id: str) -> list[CompactionRecord]:
        return await self._read(lambda c: self._sql.board_reads.get_compactions(c, agent_id))

    async def agent_infos(self, run_id: str) -> list[AgentInfo]:
        return await self._read(lambda c: self._sql.board_reads.agent_infos(c, run_id))

    async def append_event(self, run_id: str, kind: str, data: JSON) -> Event:
        return await self._write(lambda tx: self._sql.events.append_event(tx, run_id, kind,
                                                                          data))

    async def events(self, run_id: str, *, starting_after: int = 0, limit: int = 500,
                     kinds: Sequence[str] | None = None) -> list[Event]:
        return await self._read(lambda c: self._sql.reads.events(c, run_id, starting_after,
                                                                 limit, kinds))
