"""A run's event stream as Server-Sent Events: the stored backlog, then live events.

The cursor is the event ``seq``: every frame carries ``id: <seq>``, so a client
that reconnects with ``Last-Event-ID`` (or ``?starting_after=``) continues right
after the last event it saw. The stream ends after the run's terminal event.
While nothing happens it sends a keepalive every ``ping_interval`` seconds, and
it says once (an ``event: stream.no_worker`` frame, without an id) when the run is
active but nobody serves it.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

from orchestra._types import DELTA_EVENT, TERMINAL_RUN_STATUSES, run_finished_after
from orchestra.server.feeds import Feeds, Frame, Subscriber, backlog
from orchestra.store.protocol import Blackboard

Liveness = Callable[[str], Awaitable[str | None]]
"""``run_id`` → why nobody serves it, or ``None`` when someone does (or none is needed)."""


@dataclass(frozen=True, slots=True)
class StreamOptions:
    ping_interval: float
    """Seconds of silence before a keepalive."""
    include_pings: bool = False
    """Keepalives as ``event: ping`` (visible to EventSource) instead of ``: ping`` comments."""
    liveness_interval: float = 5.0
    """How often a quiet stream checks that someone still serves its run."""
    tokens: bool = True
    """The models' text deltas (``model.delta``) too; else they are skipped (the cursor
    still moves past them)."""


class EventStream:
    """One client's stream of one run."""

    def __init__(self, store: Blackboard, feeds: Feeds, liveness: Liveness, run_id: str,
                 cursor: int, options: StreamOptions) -> None:
        self._store, self._feeds, self._liveness = store, feeds, liveness
        self.run_id, self.cursor, self._opt = run_id, cursor, options
        self._done = False

    def _take(self, frame: Frame) -> str | None:
        """The frame's text if it is the next one; ``None`` for a duplicate."""
        if frame.seq <= self.cursor:
            return None
        self.cursor = frame.seq
        if frame.kind == DELTA_EVENT and not self._opt.tokens:
            return None
        self._done = run_finished_after(frame.kind, self._done)
        return frame.text

    async def _catch_up(self, until: int | None = None) -> AsyncIterator[str]:
        # a terminal event followed by a resume is not the end: ``_done`` says whether
        # the run is finished as of the last event read
        async for frame in backlog(self._store, self.run_id, self.cursor, until):
            text = self._take(frame)
            if text is not None:
                yield text

    async def frames(self) -> AsyncIterator[str]:
        """The SSE text of every event after the cursor, then keepalives, until the end."""
        run = await self._store.get_run(self.run_id)
        async for text in self._catch_up():
            yield text
        if self._done or (run.status in TERMINAL_RUN_STATUSES and self.cursor >= run.last_seq):
            return
        sub, position = self._feeds.subscribe(self.run_id, self.cursor)
        try:
            if position > self.cursor:  # handed out before we subscribed
                async for text in self._catch_up(position):
                    yield text
            async for text in self._live(sub):
                yield text
        finally:
            self._feeds.unsubscribe(self.run_id, sub)

    async def _live(self, sub: Subscriber) -> AsyncIterator[str]:
        loop = asyncio.get_running_loop()
        last_write = last_check = loop.time()
        said_orphaned = False
        held: Frame | None = None
        while not self._done:
            if sub.lagged:  # the queue overflowed: the store has what was dropped
                sub.lagged = False
                async for text in self._catch_up():
                    yield text
                continue
            if held is not None:
                frame, held = held, None
            else:
                now = loop.time()
                wait = min(last_write + self._opt.ping_interval,
                           last_check + self._opt.liveness_interval) - now
                try:
                    async with asyncio.timeout(max(wait, 0.0)):
                        frame = await sub.queue.get()
                except TimeoutError:
                    now = loop.time()
                    if now - last_check >= self._opt.liveness_interval:
                        last_check = now
                        why = await self._liveness(self.run_id)
                        if why is not None and not said_orphaned:
                            last_write = now
                            yield self._notice("stream.no_worker", why)
                        said_orphaned = why is not None
                    if loop.time() - last_write >= self._opt.ping_interval:
                        last_write = loop.time()
                        yield self._ping()
                    continue
            if frame.seq > self.cursor + 1:  # the feed started after our cursor
                async for text in self._catch_up(frame.seq - 1):
                    yield text
            live, held = self._take_ready(frame, sub)
            if live:
                last_write = last_check = loop.time()
                said_orphaned = False
                yield live

    def _take_ready(self, frame: Frame, sub: Subscriber) -> tuple[str, Frame | None]:
        """``frame`` and the frames queued right behind it, as one write (events come in
        bursts: one send per burst instead of one per event). A frame after a gap is
        handed back, for the caller to fill the gap from the store first."""
        texts = []
        while True:
            text = self._take(frame)
            if text is not None:
                texts.append(text)
            if sub.queue.empty():  # the rest of a finishing burst is sent too
                return "".join(texts), None
            frame = sub.queue.get_nowait()
            if frame.seq > self.cursor + 1:
                return "".join(texts), frame

    def _ping(self) -> str:
        if not self._opt.include_pings:
            return ": ping\n\n"
        data = json.dumps({"run_id": self.run_id, "at": time.time()})
        return f"event: ping\ndata: {data}\n\n"

    def _notice(self, kind: str, detail: str) -> str:
        # no ``seq_id``: a notice is not an event (clients must not move their cursor)
        data = json.dumps({"run_id": self.run_id, "after_seq": self.cursor, "detail": detail})
        return f"event: {kind}\ndata: {data}\n\n"
