"""``AsyncClient``: ``Client`` for asyncio code (same methods, awaited; ``runs.stream``
is an async iterator with the same reconnect-from-the-last-seq guarantee)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable
from typing import Any

import httpx
from httpx_sse import SSEError, aconnect_sse

from orchestra.client._wire import (
    ApiError,
    ApprovalsApi,
    Reconnect,
    RunsApi,
    StreamEvent,
    raise_for,
    stream_request,
    to_event,
)


class AsyncClient:
    """A connection to one server; ``token`` is sent as ``Authorization: Bearer``."""

    def __init__(self, base_url: str, token: str | None = None, *, timeout: float = 30.0,
                 stream_timeout: float = 60.0,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.http = httpx.AsyncClient(base_url=base_url.rstrip("/"), headers=headers,
                                      timeout=timeout, transport=transport)
        self.stream_timeout = httpx.Timeout(timeout, read=stream_timeout)
        self.runs = AsyncRuns(self)
        self.approvals = AsyncApprovals(self._send)

    async def request(self, method: str, path: str, **kwargs: Any) -> Any:
        response = await self.http.request(method, path, **kwargs)
        raise_for(response)
        return response.json()

    def _send(self, method: str, path: str, kwargs: dict[str, Any]) -> Awaitable[Any]:
        return self.request(method, path, **kwargs)

    async def aclose(self) -> None:
        await self.http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class AsyncRuns(RunsApi[Awaitable[Any]]):
    """``Client.runs`` awaited; ``stream`` is an async iterator."""

    def __init__(self, client: AsyncClient) -> None:
        super().__init__(client._send)
        self._c = client

    async def stream(self, run_id: str, *, starting_after: int = 0,
                     include_pings: bool = False, reconnect: bool = True,
                     max_retry_wait: float = 5.0,
                     give_up_after: float | None = 300.0,
                     tokens: bool = True) -> AsyncIterator[StreamEvent]:
        """The run's events after ``starting_after`` until its terminal event, across
        dropped connections and server restarts (see ``Client.runs.stream``, and
        ``tokens`` there)."""
        state = Reconnect(run_id, starting_after, max_retry_wait, give_up_after)
        while True:
            try:
                async for event in self._connect(run_id, state.cursor, include_pings, tokens):
                    state.delivered(event)
                    yield event
                if state.finished:
                    return  # the server ended the stream after the run's terminal event
                wait = state.next_wait(None)
            except (httpx.TransportError, SSEError, ApiError) as exc:
                wait = state.after_error(exc, reconnect)
            await asyncio.sleep(wait)

    async def _connect(self, run_id: str, cursor: int, include_pings: bool,
                       tokens: bool) -> AsyncIterator[StreamEvent]:
        async with aconnect_sse(self._c.http, "GET", f"/v1/runs/{run_id}/stream",
                                timeout=self._c.stream_timeout,
                                **stream_request(cursor, include_pings, tokens)) as source:
            if not source.response.is_success:
                await source.response.aread()
                raise_for(source.response)
            async for sse in source.aiter_sse():
                event = to_event(run_id, sse)
                if event is not None:
                    yield event


class AsyncApprovals(ApprovalsApi[Awaitable[Any]]):
    """``Client.approvals`` awaited."""
