"""``Client``: the HTTP API of ``orchestra serve`` from Python.

    from orchestra.client import Client

    with Client("http://127.0.0.1:8765", token=os.environ.get("ORCHESTRA_TOKEN")) as api:
        run = api.runs.create("mypkg.pipelines:build", {"topic": "x"})
        for event in api.runs.stream(run["run_id"]):
            print(event.seq, event.kind, event.data)

``runs.stream`` reconnects by itself after a dropped connection or a restarted
server, from the last event it delivered: every event arrives once, in order.
``AsyncClient`` is the same for asyncio code.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
from httpx_sse import SSEError, connect_sse

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


class Client:
    """A connection to one server; ``token`` is sent as ``Authorization: Bearer``."""

    def __init__(self, base_url: str, token: str | None = None, *, timeout: float = 30.0,
                 stream_timeout: float = 60.0, transport: httpx.BaseTransport | None = None
                 ) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.http = httpx.Client(base_url=base_url.rstrip("/"), headers=headers,
                                 timeout=timeout, transport=transport)
        self.stream_timeout = httpx.Timeout(timeout, read=stream_timeout)
        """A stream read waits this long for a byte (the server pings every 15 s)."""
        self.runs = Runs(self)
        self.approvals = Approvals(self._send)

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self.http.request(method, path, **kwargs)
        raise_for(response)
        return response.json()

    def _send(self, method: str, path: str, kwargs: dict[str, Any]) -> Any:
        return self.request(method, path, **kwargs)

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Runs(RunsApi[Any]):
    """``create``, ``list``, ``get``, ``cancel``, ``resume``, ``approvals`` (the answers'
    JSON), and ``stream``."""

    def __init__(self, client: Client) -> None:
        super().__init__(client._send)
        self._c = client

    def stream(self, run_id: str, *, starting_after: int = 0, include_pings: bool = False,
               reconnect: bool = True, max_retry_wait: float = 5.0,
               give_up_after: float | None = 300.0, tokens: bool = True
               ) -> Iterator[StreamEvent]:
        """The run's events after ``starting_after`` until its terminal event.

        A dropped connection or a server restart is retried (backoff up to
        ``max_retry_wait`` seconds, for at most ``give_up_after`` seconds without
        progress) with ``Last-Event-ID`` set to the last event delivered, so nothing
        is skipped or repeated. Errors the server answers (404, 401, ...) raise
        ``ApiError`` at once. ``tokens=False``: without the models' text deltas
        (``model.delta`` events).
        """
        state = Reconnect(run_id, starting_after, max_retry_wait, give_up_after)
        while True:
            try:
                for event in self._connect(run_id, state.cursor, include_pings, tokens):
                    state.delivered(event)
                    yield event
                if state.finished:
                    return  # the server ended the stream after the run's terminal event
                # closed before the terminal event (the server is shutting down): again
                wait = state.next_wait(None)
            except (httpx.TransportError, SSEError, ApiError) as exc:
                wait = state.after_error(exc, reconnect)
            time.sleep(wait)

    def _connect(self, run_id: str, cursor: int, include_pings: bool,
                 tokens: bool) -> Iterator[StreamEvent]:
        with connect_sse(self._c.http, "GET", f"/v1/runs/{run_id}/stream",
                         timeout=self._c.stream_timeout,
                         **stream_request(cursor, include_pings, tokens)) as source:
            if not source.response.is_success:
                source.response.read()
                raise_for(source.response)
            for sse in source.iter_sse():
                event = to_event(run_id, sse)
                if event is not None:
                    yield event


class Approvals(ApprovalsApi[Any]):
    """``decide`` (the decided approval's JSON)."""
