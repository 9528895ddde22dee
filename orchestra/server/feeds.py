"""One store follower per run, fanned out to every stream of that run.

A hundred SSE clients of one run cost one ``store.follow`` (an indexed range read
per commit, woken at once by this process's own commits and polled for other
processes'), not a hundred pollers. Each event is encoded once, as the SSE frame
every subscriber writes.

Correctness does not rest on the feed: a subscriber keeps its own cursor and
reads the store for anything between its cursor and what the feed hands it (a
feed that started late, a queue that overflowed), so delivery is gap-free and
duplicate-free whatever the timing.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import structlog

from orchestra._types import Event
from orchestra.store.protocol import EventLog

log = structlog.get_logger("orchestra.server")

_PAGE = 500


@dataclass(frozen=True, slots=True)
class Frame:
    """One event as the bytes of its SSE frame."""

    seq: int
    kind: str
    text: str


def encode(event: Event) -> Frame:
    data = json.dumps({"run_id": event.run_id, "seq_id": event.seq, "kind": event.kind,
                       "at": event.at, "data": event.data}, separators=(",", ":"),
                      default=str)
    return Frame(event.seq, event.kind, f"id: {event.seq}\nevent: {event.kind}\ndata: {data}\n\n")


@dataclass(eq=False, slots=True)
class Subscriber:
    """One stream's mailbox; ``lagged`` says the queue overflowed (re-read the store)."""

    queue: asyncio.Queue[Frame]
    lagged: bool = False


@dataclass(eq=False, slots=True)
class _Feed:
    run_id: str
    seq: int
    subscribers: set[Subscriber] = field(default_factory=set)
    task: asyncio.Task[None] | None = None
    idle_close: asyncio.TimerHandle | None = None


class Feeds:
    """The live feeds of this server's streams, one per run that has subscribers."""

    def __init__(self, store: EventLog, *, queue_size: int = 1000,
                 linger: float = 5.0) -> None:
        self._store = store
        self._queue_size = queue_size
        self._linger = linger
        self._feeds: dict[str, _Feed] = {}

    def subscribe(self, run_id: str, cursor: int) -> tuple[Subscriber, int]:
        """Register a mailbox; returns it and the feed's position when it registered.

        Events up to that position were handed out before this subscriber existed:
        the caller reads those from the store. No ``await`` separates the two.
        """
        feed = self._feeds.get(run_id)
        if feed is None:
            feed = self._feeds[run_id] = _Feed(run_id, cursor)
            feed.task = asyncio.create_task(self._pump(feed), name=f"feed {run_id}")
        if feed.idle_close is not None:
            feed.idle_close.cancel()
            feed.idle_close = None
        sub = Subscriber(asyncio.Queue(self._queue_size))
        feed.subscribers.add(sub)
        return sub, feed.seq

    def unsubscribe(self, run_id: str, sub: Subscriber) -> None:
        feed = self._feeds.get(run_id)
        if feed is None:
            return
        feed.subscribers.discard(sub)
        if not feed.subscribers and feed.idle_close is None:
            # kept a little while: a client reconnecting after a cut finds it warm
            feed.idle_close = asyncio.get_running_loop().call_later(
                self._linger, self._close_if_idle, feed)

    def _close_if_idle(self, feed: _Feed) -> None:
        feed.idle_close = None
        if not feed.subscribers and self._feeds.get(feed.run_id) is feed:
            del self._feeds[feed.run_id]
            if feed.task is not None:
                feed.task.cancel()

    async def _pump(self, feed: _Feed) -> None:
        try:
            async for event in self._store.follow(feed.run_id, starting_after=feed.seq):
                frame = encode(event)
                feed.seq = event.seq
                for sub in feed.subscribers:
                    try:
                        sub.queue.put_nowait(frame)
                    except asyncio.QueueFull:
                        sub.lagged = True  # it reads the store from its cursor instead
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the store closed or broke: streams notice on their own
            log.warning("feed stopped", run=feed.run_id, error=str(exc))

    async def close(self) -> None:
        feeds, self._feeds = list(self._feeds.values()), {}
        for feed in feeds:
            if feed.idle_close is not None:
                feed.idle_close.cancel()
            if feed.task is not None:
                feed.task.cancel()
        for feed in feeds:
            if feed.task is not None:
                with contextlib.suppress(asyncio.CancelledError):
                    await feed.task

    @property
    def open_feeds(self) -> int:
        return len(self._feeds)


async def backlog(store: EventLog, run_id: str, after: int,
                  until: int | None = None) -> AsyncIterator[Frame]:
    """The stored events after ``after`` (up to ``until``), read in pages."""
    while until is None or after < until:
        page = await store.events(run_id, starting_after=after, limit=_PAGE)
        for event in page:
            if until is not None and event.seq > until:
                return
            after = event.seq
            yield encode(event)
        if len(page) < _PAGE:
            return
