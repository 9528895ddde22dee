"""The history half of ``PostgresBlackboard`` that is PostgreSQL's own: reading an
agent's history and ``follow``, whose followers wake on ``NOTIFY`` (the run id as
payload) through one ``LISTEN`` connection per store handle. The rest is shared
(``store/facade_history.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import asyncpg

from orchestra._errors import StoreError
from orchestra._types import Event, Message
from orchestra.store.facade_history import HistoryFacade
from orchestra.store.postgres import board_reads as _board_reads
from orchestra.store.postgres.retry import LOST
from orchestra.store.postgres.txn import Txn

_FOLLOW_PAGE = 500
_CHANNEL = "orchestra_events"
POLL_SECONDS = 0.5
"""How often a follower reads new events where it cannot LISTEN (behind a pooler)."""


class HistoryMethods(HistoryFacade[Txn, asyncpg.Connection]):
    """Mixed into ``PostgresBlackboard``, which provides ``_write``, ``_read``,
    ``_dsn``, ``_closed``, and the followers' ``_signals``, ``_listener``, ``_listening``,
    ``_listen_dsn`` (None behind a transaction pooler without a direct URL: poll)."""

    _dsn: str
    _closed: bool
    _signals: dict[str, set[asyncio.Event]]
    _listener: asyncpg.Connection | None
    _listen_dsn: str | None
    _listening: asyncio.Lock

    # -- agents' messages -----------------------------------------------------
    async def get_messages(self, agent_id: str, *, after_seq: int = 0,
                           limit: int | None = None) -> list[Message]:
        return await self._read(lambda c: _board_reads.get_messages(c, agent_id, after_seq, limit))

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

