"""The sync and async clients build every request once (``RunsApi``, ``ApprovalsApi``) and
share the stream's reconnect policy: both send the same requests and handle a dropped
connection and a refusal alike (an in-process transport stands in for the server)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest

from orchestra.client import ApiError, AsyncClient, Client, StreamEvent

EVENTS = [(1, "run.created"), (2, "task.created"), (3, "run.completed")]


class FakeServer:
    """Answers like ``orchestra serve``: records every request; the first stream
    connection drops after one event when ``drop`` is set."""

    def __init__(self, *, drop: bool = False, refuse: int | None = None) -> None:
        self.seen: list[tuple[str, str, dict[str, str], Any]] = []
        self.drop, self.refuse, self.connections = drop, refuse, 0

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content) if request.content else None
        params = dict(request.url.params)
        self.seen.append((request.method, request.url.path, params, body))
        if self.refuse is not None:
            return httpx.Response(self.refuse, json={"detail": "no such run"})
        if not request.url.path.endswith("/stream"):
            return httpx.Response(200, json={"ok": request.url.path})
        self.connections += 1
        after = int(request.headers["Last-Event-ID"])
        if self.drop and self.connections == 1:
            raise httpx.ConnectError("connection reset", request=request)
        frames = "".join(
            f"id: {seq}\nevent: {kind}\ndata: "
            f"{json.dumps({'run_id': 'r1', 'seq_id': seq, 'data': {}, 'at': 1.0})}\n\n"
            for seq, kind in EVENTS if seq > after)
        return httpx.Response(200, text=": ping\n\n" + frames,
                              headers={"content-type": "text/event-stream"})


def _calls_sync(server: FakeServer) -> list[Any]:
    with Client("http://x/", token="t", transport=httpx.MockTransport(server)) as api:
        return [api.runs.create("p:f", {"a": 1}, model="m", max_tokens=5),
                api.runs.list(active=True, status="paused", limit=3),
                api.runs.get("r1"), api.runs.cancel("r1"), api.runs.resume("r1", max_tokens=9),
                api.runs.resume("r1"), api.runs.approvals("r1", status="pending"),
                api.approvals.decide("a1", False, reason="no", by="me")]


async def _calls_async(server: FakeServer) -> list[Any]:
    async with AsyncClient("http://x/", token="t",
                           transport=httpx.MockTransport(server)) as api:
        return [await api.runs.create("p:f", {"a": 1}, model="m", max_tokens=5),
                await api.runs.list(active=True, status="paused", limit=3),
                await api.runs.get("r1"), await api.runs.cancel("r1"),
                await api.runs.resume("r1", max_tokens=9), await api.runs.resume("r1"),
                await api.runs.approvals("r1", status="pending"),
                await api.approvals.decide("a1", False, reason="no", by="me")]


def test_both_clients_send_the_same_requests() -> None:
    sync, async_ = FakeServer(), FakeServer()
    answers = _calls_sync(sync)
    assert asyncio.run(_calls_async(async_)) == answers
    assert sync.seen == async_.seen == [
        ("POST", "/v1/runs", {}, {"pipeline": "p:f", "input": {"a": 1}, "model": "m",
                                  "max_tokens": 5}),
        ("GET", "/v1/runs", {"active": "true", "limit": "3", "status": "paused"}, None),
        ("GET", "/v1/runs/r1", {}, None),
        ("POST", "/v1/runs/r1/cancel", {}, None),
        ("POST", "/v1/runs/r1/resume", {}, {"max_tokens": 9}),
        ("POST", "/v1/runs/r1/resume", {}, None),
        ("GET", "/v1/runs/r1/approvals", {"status": "pending"}, None),
        ("POST", "/v1/approvals/a1", {}, {"approve": False, "reason": "no", "by": "me"})]


def _stream_sync(server: FakeServer, **kw: Any) -> list[StreamEvent]:
    with Client("http://x", transport=httpx.MockTransport(server)) as api:
        return list(api.runs.stream("r1", **kw))


async def _stream_async(server: FakeServer, **kw: Any) -> list[StreamEvent]:
    async with AsyncClient("http://x", transport=httpx.MockTransport(server)) as api:
        return [e async for e in api.runs.stream("r1", **kw)]


@pytest.mark.parametrize("stream", ["sync", "async"])
def test_a_stream_reconnects_from_its_last_event_and_stops_on_a_refusal(stream: str) -> None:
    def run(server: FakeServer, **kw: Any) -> list[StreamEvent]:
        return _stream_sync(server, **kw) if stream == "sync" else \
            asyncio.run(_stream_async(server, **kw))

    dropped = FakeServer(drop=True)
    got = run(dropped)
    assert [(e.seq, e.kind) for e in got] == EVENTS and dropped.connections == 2
    with pytest.raises(ApiError, match="broke") as broke:
        run(FakeServer(drop=True), reconnect=False)
    assert broke.value.status == 0
    refused = FakeServer(refuse=404)
    with pytest.raises(ApiError) as gone:
        run(refused)
    assert (gone.value.status, gone.value.detail, len(refused.seen)) == (404, "no such run", 1)
    with pytest.raises(ApiError, match="no event for 0 s"):
        run(FakeServer(refuse=503), give_up_after=0.0)  # a 5xx is retried until it gives up
