"""The history half of ``SQLiteBlackboard``: agents' messages and the event log.

Split from ``sqlite.py`` to keep each module to one job. ``follow`` wakes on the
store's commit signal (``_committed``, replaced after each commit that has followers).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import TypeVar

from orchestra._types import JSON, AgentInfo, CompactionRecord, Event, Message
from orchestra.store.sqlite import board_reads as _board_reads
from orchestra.store.sqlite import reads as _reads
from orchestra.store.sqlite.events import append_event
from orchestra.store.sqlite.known import Known
from orchestra.store.sqlite.message_reads import MessageReads
from orchestra.store.sqlite.txn import Conn, Txn

T = TypeVar("T")
_FOLLOW_PAGE = 500


class HistoryMethods:
    """Mixed into ``SQLiteBlackboard``, which provides ``_write``, ``_read``, ``_closed``,
    ``_known``, ``_messages``, ``_followers`` and ``_committed``."""

    _closed: bool
    _known: Known
    _messages: MessageReads
    _followers: int
    _committed: asyncio.Event

    async def _write(self, op: Callable[[Txn], Awaitable[T]]) -> T:
        raise NotImplementedError

    async def _read(self, op: Callable[[Conn], Awaitable[T]]) -> T:
        raise NotImplementedError

    # -- agents' messages -----------------------------------------------------
    async def get_messages(self, agent_id: str, *, after_seq: int = 0,
                           limit: int | None = None) -> list[Message]:
        if limit is None:  # read together with the other reads asked meanwhile
            messages = await self._messages.get(agent_id, after_seq)
            self._known.read(agent_id, messages[-1].seq if messages else after_seq)
            return messages
        return await self._read(lambda c: _board_reads.get_messages(c, agent_id, after_seq,
                                                                      limit))

    async def search_messages(self, agent_id: str, text: str, *,
                              limit: int = 10) -> list[Message]:
        """Messages holding any word of ``text`` (case-insensitive), most words matched
        first, then newest. A scan of one agent's history (messages have no FTS index)."""
        return await self._read(lambda c: _board_reads.search_messages(c, agent_id, text,
                                                                         limit))

    async def get_compactions(self, agent_id: str) -> list[CompactionRecord]:
        return await self._read(lambda c: _board_reads.get_compactions(c, agent_id))

    async def agent_infos(self, run_id: str) -> list[AgentInfo]:
        return await self._read(lambda c: _board_reads.agent_infos(c, run_id))

    # -- events ---------------------------------------------------------------
    async def append_event(self, run_id: str, kind: str, data: JSON) -> Event:
        return await self._write(lambda tx: append_event(tx, run_id, kind, data))

    async def events(self, run_id: str, *, starting_after: int = 0, limit: int = 500,
                     kinds: Sequence[str] | None = None) -> list[Event]:
        return await self._read(lambda c: _reads.events(c, run_id, starting_after, limit,
                                                        kinds))

    async def follow(self, run_id: str, *, starting_after: int = 0,
                     poll_interval: float = 0.2) -> AsyncIterator[Event]:
        """Yield the run's events after ``starting_after`` as they commit, until the store closes.

        Commits through this store wake it at once; commits by other processes are
        seen by polling every ``poll_interval`` seconds (an indexed range read).
        """
        cursor = starting_after
        self._followers += 1
        try:
            while not self._closed:
                signal = self._committed  # taken before reading: no commit can slip between
                page = await self.events(run_id, starting_after=cursor, limit=_FOLLOW_PAGE)
                for event in page:
                    cursor = event.seq
                    yield event
                if len(page) < _FOLLOW_PAGE and not self._closed:
                    try:
                        async with asyncio.timeout(poll_interval):
                            await signal.wait()
                    except TimeoutError:
                        pass
        finally:
            self._followers -= 1

