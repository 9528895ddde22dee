"""``AsyncClient``: ``Client`` for asyncio code (same methods, awaited; ``runs.stream``
is an async iterator with the same reconnect-from-the-last-seq guarantee)."""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import AsyncIterator
from typing import Any

import httpx
from httpx_sse import SSEError, aconnect_sse

from orchestra.client._wire import (
    ApiError,
    Reconnect,
    StreamEvent,
    create_body,
    list_params,
    raise_for,
    retryable,
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
        self.approvals = AsyncApprovals(self)

    async def request(self, method: str, path: str, **kwargs: Any) -> Any:
        response = await self.http.request(method, path, **kwargs)
        raise_for(response)
        return response.json()

    async def aclose(self) -> None:
        await self.http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class AsyncRuns:
    def __init__(self, client: AsyncClient) -> None:
        self._c = client

    async def create(self, pipeline: str, input: dict[str, Any] | None = None, *,
                     model: str | dict[str, str] | None = None,
                     max_tokens: int | None = None) -> dict[str, Any]:
        body = create_body(pipeline, input, model, max_tokens)
        result: dict[str, Any] = await self._c.request("POST", "/v1/runs", json=body)
        return result

    async def list(self, *, active: bool = False, status: str | None = None,
                   pipeline: str | None = None, limit: int = 50,
                   cursor: str | None = None) -> dict[str, Any]:
        params = list_params(active, status, pipeline, limit, cursor)
        result: dict[str, Any] = await self._c.request("GET", "/v1/runs", params=params)
        return result

    async def get(self, run_id: str) -> dict[str, Any]:
        result: dict[str, Any] = await self._c.request("GET", f"/v1/runs/{run_id}")
        return result

    async def cancel(self, run_id: str) -> dict[str, Any]:
        result: dict[str, Any] = await self._c.request("POST", f"/v1/runs/{run_id}/cancel")
        return result

    async def resume(self, run_id: str, *, max_tokens: int | None = None) -> dict[str, Any]:
        """Continue the run in the background (``max_tokens``: its new token cap)."""
        body = {"max_tokens": max_tokens} if max_tokens is not None else None
        result: dict[str, Any] = await self._c.request("POST", f"/v1/runs/{run_id}/resume",
                                                 json=body)
        return result

    async def approvals(self, run_id: str, *,
                        status: str | None = None) -> builtins.list[dict[str, Any]]:
        params = {"status": status} if status else {}
        path = f"/v1/runs/{run_id}/approvals"
        result: builtins.list[dict[str, Any]] = await self._c.request("GET", path,
                                                                      params=params)
        return result

    async def stream(self, run_id: str, *, starting_after: int = 0,
                     include_pings: bool = False, reconnect: bool = True,
                     max_retry_wait: float = 5.0,
                     give_up_after: float | None = 300.0) -> AsyncIterator[StreamEvent]:
        """The run's events after ``starting_after`` until its terminal event, across
        dropped connections and server restarts (see ``Client.runs.stream``)."""
        state = Reconnect(run_id, starting_after, max_retry_wait, give_up_after)
        while True:
            cause: BaseException | None = None
            try:
                async for event in self._connect(run_id, state.cursor, include_pings):
                    state.delivered(event)
                    yield event
                if state.finished:
                    return  # the server ended the stream after the run's terminal event
            except (httpx.TransportError, SSEError, ApiError) as exc:
                if not reconnect or not retryable(exc):
                    if isinstance(exc, ApiError):
                        raise
                    raise ApiError(0, f"stream of run {run_id} broke: {exc}") from exc
                cause = exc
            await asyncio.sleep(state.next_wait(cause))

    async def _connect(self, run_id: str, cursor: int,
                       include_pings: bool) -> AsyncIterator[StreamEvent]:
        async with aconnect_sse(self._c.http, "GET", f"/v1/runs/{run_id}/stream",
                                timeout=self._c.stream_timeout,
                                **stream_request(cursor, include_pings)) as source:
            if not source.response.is_success:
                await source.response.aread()
                raise_for(source.response)
            async for sse in source.aiter_sse():
                event = to_event(run_id, sse)
                if event is not None:
                    yield event


class AsyncApprovals:
    def __init__(self, client: AsyncClient) -> None:
        self._c = client

    async def decide(self, approval_id: str, approve: bool, *, reason: str | None = None,
                     by: str | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"approve": approve, "reason": reason}
        if by is not None:
            body["by"] = by
        result: dict[str, Any] = await self._c.request("POST", f"/v1/approvals/{approval_id}",
                                                       json=body)
        return result
