"""The history half of ``PostgresBlackboard``: agents' messages and the event log.

Split from ``store.py`` to keep each module to one job. Followers wake on ``NOTIFY``
(the run id as payload) through one ``LISTEN`` connection per store handle.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import TypeVar

import asyncpg

from orchestra._errors import StoreError
from orchestra._types import JSON, AgentInfo, CompactionRecord, Event, Message
from orchestra.store.codec import Encoder
from orchestra.store.postgres import board_reads as _board_reads
from orchestra.store.postgres import reads as _reads
from orchestra.store.postgres.events import append_event
from orchestra.store.postgres.retry import LOST
from orchestra.store.postgres.txn import Txn

T = TypeVar("T")
_FOLLOW_PAGE = 500
_CHANNEL = "orchestra_events"
POLL_SECONDS = 0.5
"""How often a follower reads new events where it cannot LISTEN (behind a pooler)."""


class HistoryMethods:
    """Mixed into ``PostgresBlackboard``, which provides ``_enc``, ``_submit``, ``_read``,
    ``dsn``, ``_closed``, and the followers' ``_signals``, ``_listener``, ``_listening``,
    ``_listen_dsn`` (None behind a transaction pooler without a direct URL: poll)."""

    _enc: Encoder
    _dsn: str
    _closed: bool
    _signals: dict[str, set[asyncio.Event]]
    _listener: asyncpg.Connection | None
    _listen_dsn: str | None
    _listening: asyncio.Lock

    async def _submit(self, op: Callable[[Txn], Awaitable[T]]) -> T:
        raise NotImplementedError

    async def _read(self, op: Callable[[asyncpg.Connection], Awaitable[T]]) -> T:
        raise NotImplementedError

    # -- agents' messages -----------------------------------------------------
    async def get_messages(self, agent_id: str, *, after_seq: int = 0,
                           limit: int | None = None) -> list[Message]:
        return await self._read(lambda c: _board_reads.get_messages(c, agent_id, after_seq, limit))

    async def search_messages(self, agent_id: str, text: str, *,
                              limit: int = 10) -> list[Message]:
        return await self._read(lambda c: _board_reads.search_messages(c, agent_id, text, limit))

    async def get_compactions(self, agent_id: str) -> list[CompactionRecord]:
        return await self._read(lambda c: _board_reads.get_compactions(c, agent_id))

    async def agent_infos(self, run_id: str) -> list[AgentInfo]:
        return await self._read(lambda c: _board_reads.agent_infos(c, run_id))

    # -- events ---------------------------------------------------------------
    async def append_event(self, run_id: str, kind: str, data: JSON) -> Event:
        return await self._submit(lambda tx: append_event(tx, run_id, kind, data))

    async def events(self, run_id: str, *, starting_after: int = 0, limit: int = 500,
                     kinds: Sequence[str] | None = None) -> list[Event]:
        return await self._read(lambda c: _reads.events(c, run_id, starting_after, limit,
                                                        kinds))

    async def follow(self, run_id: str, *, starting_after: int = 0,
                     safety_interval: float = 10.0) -> AsyncIterator[Event]:
        """Yield the run's events after ``starting_after`` as they commit, until the store closes.

        Woken by ``NOTIFY`` from any process's commit (no polling); ``safety_interval``
        only bounds the wait should a notification be lost with a dropped connection.
        Without a LISTEN connection (behind a transaction pooler with no ``listen_dsn``,
        or while it cannot connect) followers poll every ``POLL_SECONDS``.
        """
        cursor = starting_after
        signal = asyncio.Event()
        self._signals.setdefault(run_id, set()).add(signal)
        await self._listen()
        try:
            while not self._closed:
                signal.clear()  # cleared before reading: a commit after the read sets it
                page = await self.events(run_id, starting_after=cursor, limit=_FOLLOW_PAGE)
                for event in page:
                    cursor = event.seq
                    yield event
                if len(page) < _FOLLOW_PAGE and not self._closed:
                    listening = self._listener is not None and not self._listener.is_closed()
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(safety_interval if listening
                                                   else min(safety_interval, POLL_SECONDS)):
                            await signal.wait()
                    if self._listener is None or self._listener.is_closed():
                        await self._listen()
        except StoreError:
            if not self._closed:
                raise
        finally:
            followers = self._signals.get(run_id, set())
            followers.discard(signal)
            if not followers:
                self._signals.pop(run_id, None)

    async def _listen(self) -> None:
        """One ``LISTEN`` connection per handle, shared by its followers."""
        async with self._listening:
            if self._closed or self._listen_dsn is None or (
                    self._listener is not None and not self._listener.is_closed()):
                return
            with contextlib.suppress(*LOST):
                conn = await asyncpg.connect(self._listen_dsn, statement_cache_size=0)
                await conn.add_listener(_CHANNEL, self._notified)
                self._listener = conn

    def _notified(self, conn: object, pid: int, channel: str, payload: object) -> None:
        for signal in self._signals.get(str(payload), ()):
            signal.set()

