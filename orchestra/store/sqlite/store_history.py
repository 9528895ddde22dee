"""The history half of ``SQLiteBlackboard`` that is SQLite's own: reading an agent's
history whole (batched with the reads asked meanwhile) and ``follow``, which wakes on
the store's commit signal (``_committed``, replaced after each commit that has
followers). The rest is shared (``store/facade_history.py``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from orchestra._types import Event, Message
from orchestra.store.facade_history import HistoryFacade
from orchestra.store.sqlite import board_reads as _board_reads
from orchestra.store.sqlite.known import Known
from orchestra.store.sqlite.message_reads import MessageReads
from orchestra.store.sqlite.txn import Conn, Txn

_FOLLOW_PAGE = 500


class HistoryMethods(HistoryFacade[Txn, Conn]):
    """Mixed into ``SQLiteBlackboard``, which provides ``_write``, ``_read``, ``_closed``,
    ``_known``, ``_messages``, ``_followers`` and ``_committed``."""

    _closed: bool
    _known: Known
    _messages: MessageReads
    _followers: int
    _committed: asyncio.Event

    # -- agents' messages -----------------------------------------------------
    async def get_messages(self, agent_id: str, *, after_seq: int = 0,
                           limit: int | None = None) -> list[Message]:
        if limit is None:  # read together with the other reads asked meanwhile
            messages = await self._messages.get(agent_id, after_seq)
            self._known.read(agent_id, messages[-1].seq if messages else after_seq)
            return messages
        return await self._read(lambda c: _board_reads.get_messages(c, agent_id, after_seq,
                                                                      limit))

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

