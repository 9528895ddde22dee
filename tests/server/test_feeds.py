"""The fan-out behind the SSE endpoint, in process on a real store: one store follower
per run whatever the number of streams, and every event exactly once even when a
slow stream's mailbox overflows or a stream subscribes behind the feed."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from orchestra import NewTask, SQLiteBlackboard
from orchestra.server.feeds import Feeds
from orchestra.server.sse import EventStream, StreamOptions


async def _never_orphaned(run_id: str) -> str | None:
    return None


def _seqs(texts: list[str]) -> list[int]:
    return [int(line[4:]) for text in texts for line in text.splitlines()
            if line.startswith("id: ")]


async def _until(check: Callable[[], bool]) -> None:
    for _ in range(3000):
        if check():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("timed out")


async def _collect(stream: EventStream, out: list[str], delay: float = 0.0) -> None:
    async for text in stream.frames():
        out.append(text)
        if delay:
            await asyncio.sleep(delay)


async def test_many_streams_share_one_follower_and_slow_ones_lose_nothing(
        tmp_path: Path) -> None:
    store = await SQLiteBlackboard.open(tmp_path / "s.db")
    try:
        run = await store.create_run("p", {}, tasks=[NewTask("a", {})])
        feeds = Feeds(store, queue_size=2, linger=0.05)  # overflows at once
        options = StreamOptions(ping_interval=60)
        outs: list[list[str]] = [[] for _ in range(20)]
        readers = [asyncio.create_task(_collect(
            EventStream(store, feeds, _never_orphaned, run.id, 0, options), out,
            delay=0.002 if i % 2 else 0.0)) for i, out in enumerate(outs)]
        await _until(lambda: all(outs))  # every stream has subscribed and read
        assert feeds.open_feeds == 1 and store.stats().followers == 1  # one for 20 streams
        for i in range(200):
            await store.append_event(run.id, "tick", {"i": i})
        await store.set_run_status(run.id, "completed")
        await asyncio.wait_for(asyncio.gather(*readers), timeout=60)
        last = (await store.get_run(run.id)).last_seq
        for out in outs:
            assert _seqs(out) == list(range(1, last + 1))
            assert "event: run.completed" in out[-1]
        # closed once nobody reads (after its linger)
        await _until(lambda: feeds.open_feeds == 0 and store.stats().followers == 0)
        await feeds.close()
    finally:
        await store.close()


async def test_a_stream_that_subscribes_behind_the_feed_reads_the_gap_from_the_store(
        tmp_path: Path) -> None:
    store = await SQLiteBlackboard.open(tmp_path / "s.db")
    try:
        run = await store.create_run("p", {}, tasks=[NewTask("a", {})])
        feeds = Feeds(store)
        first: list[str] = []
        options = StreamOptions(ping_interval=60)
        early = asyncio.create_task(_collect(
            EventStream(store, feeds, _never_orphaned, run.id, 0, options), first))
        await _until(lambda: bool(first))
        for i in range(30):
            await store.append_event(run.id, "tick", {"i": i})
        await _until(lambda: _seqs(first)[-1:] == [32])
        # a late stream starting at seq 5: the feed is at 32, the stream must not skip 6..32
        late: list[str] = []
        later = asyncio.create_task(_collect(
            EventStream(store, feeds, _never_orphaned, run.id, 5, options), late))
        await store.set_run_status(run.id, "cancelled")
        await asyncio.wait_for(asyncio.gather(early, later), timeout=60)
        last = (await store.get_run(run.id)).last_seq  # run.cancelled, task.cancelled
        assert _seqs(late) == list(range(6, last + 1))
        assert _seqs(first) == list(range(1, last + 1))
        await feeds.close()
    finally:
        await store.close()
