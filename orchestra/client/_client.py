"""``Client``: the HTTP API of ``orchestra serve`` from Python.

    from orchestra.client import Client

    with Client("http://127.0.0.1:8765", token=os.environ.get("ORCHESTRA_TOKEN")) as api:
        run = api.runs.create("mypkg.pipelines:build", {"topic": "x"})
        for event in api.runs.stream(run["run_id"]):
            print(event.seq, event.kind, event.data)

``runs.stream`` reconnects by itself after a dropped connection or a restarted
server, from the last event it delivered: every event arrives once, in order.
"""

from __future__ import annotations

import builtins
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
from httpx_sse import SSEError, connect_sse

from orchestra._errors import OrchestraError

TERMINAL_EVENTS = frozenset({"run.completed", "run.failed", "run.cancelled"})


class ApiError(OrchestraError):
    """The server refused a request; ``status`` and ``detail`` come from its problem document."""

    def __init__(self, status: int, detail: str, problem: dict[str, Any] | None = None) -> None:
        super().__init__(f"HTTP {status}: {detail}")
        self.status, self.detail, self.problem = status, detail, problem or {}


@dataclass(frozen=True, slots=True)
class StreamEvent:
    """One frame of a run's stream: an event (``seq`` set) or a notice/ping (``seq`` None)."""

    run_id: str
    seq: int | None
    kind: str
    data: Any
    at: float | None = None


def _raise_for(response: httpx.Response) -> None:
    if response.is_success:
        return
    try:
        doc = response.json()
        detail = str(doc.get("detail", response.text))
    except (ValueError, AttributeError):
        doc, detail = None, response.text or response.reason_phrase
    raise ApiError(response.status_code, detail, doc if isinstance(doc, dict) else None)


class Client:
    """A connection to one server; ``token`` is sent as ``Authorization: Bearer``."""

    def __init__(self, base_url: str, token: str | None = None, *, timeout: float = 30.0,
                 stream_timeout: float = 60.0, transport: httpx.BaseTransport | None = None
                 ) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(base_url=base_url.rstrip("/"), headers=headers,
                                  timeout=timeout, transport=transport)
        self._stream_timeout = httpx.Timeout(timeout, read=stream_timeout)
        self.runs = Runs(self)
        self.approvals = Approvals(self)

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self._http.request(method, path, **kwargs)
        _raise_for(response)
        return response.json()

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Runs:
    def __init__(self, client: Client) -> None:
        self._c = client

    def create(self, pipeline: str, input: dict[str, Any] | None = None, *,
               model: str | dict[str, str] | None = None,
               max_tokens: int | None = None) -> dict[str, Any]:
        """Start a run in the background: ``{"run_id", "status"}``."""
        body: dict[str, Any] = {"pipeline": pipeline, "input": input or {}}
        if model is not None:
            body["model"] = model
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        result: dict[str, Any] = self._c.request("POST", "/v1/runs", json=body)
        return result

    def list(self, *, active: bool = False, status: str | None = None,
             pipeline: str | None = None, limit: int = 50,
             cursor: str | None = None) -> dict[str, Any]:
        """One page, newest first: ``{"runs": [...], "next_cursor": ...}``."""
        params: dict[str, Any] = {"active": str(active).lower(), "limit": limit}
        for key, value in (("status", status), ("pipeline", pipeline), ("cursor", cursor)):
            if value is not None:
                params[key] = value
        result: dict[str, Any] = self._c.request("GET", "/v1/runs", params=params)
        return result

    def get(self, run_id: str) -> dict[str, Any]:
        """Status, steps, per-agent state and usage (the polling endpoint)."""
        result: dict[str, Any] = self._c.request("GET", f"/v1/runs/{run_id}")
        return result

    def cancel(self, run_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self._c.request("POST", f"/v1/runs/{run_id}/cancel")
        return result

    def resume(self, run_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self._c.request("POST", f"/v1/runs/{run_id}/resume")
        return result

    def approvals(self, run_id: str, *,
                  status: str | None = None) -> builtins.list[dict[str, Any]]:
        params = {"status": status} if status else {}
        path = f"/v1/runs/{run_id}/approvals"
        result: builtins.list[dict[str, Any]] = self._c.request("GET", path, params=params)
        return result

    def stream(self, run_id: str, *, starting_after: int = 0, include_pings: bool = False,
               reconnect: bool = True, max_retry_wait: float = 5.0,
               give_up_after: float | None = 300.0) -> Iterator[StreamEvent]:
        """The run's events after ``starting_after`` until its terminal event.

        A dropped connection or a server restart is retried (backoff up to
        ``max_retry_wait`` seconds, for at most ``give_up_after`` seconds without
        progress) with ``Last-Event-ID`` set to the last event delivered, so nothing
        is skipped or repeated. Errors the server answers (404, 401, ...) raise
        ``ApiError`` at once.
        """
        cursor, wait, stalled_since = starting_after, 0.1, time.monotonic()
        while True:
            try:
                for event in self._connect(run_id, cursor, include_pings):
                    if event.seq is not None:
                        cursor, wait, stalled_since = event.seq, 0.1, time.monotonic()
                    yield event
                    if event.kind in TERMINAL_EVENTS:
                        return
                # the server closed the stream before the terminal event (shutting down)
            except (httpx.TransportError, SSEError) as exc:
                if not reconnect:
                    raise ApiError(0, f"stream of run {run_id} broke: {exc}") from exc
            except ApiError as exc:
                if exc.status < 500 or not reconnect:
                    raise
            if give_up_after is not None and time.monotonic() - stalled_since > give_up_after:
                raise ApiError(0, f"stream of run {run_id}: no event for {give_up_after:.0f} s "
                                  f"and the server is unreachable (last event {cursor})")
            time.sleep(wait)
            wait = min(wait * 2, max_retry_wait)

    def _connect(self, run_id: str, cursor: int,
                 include_pings: bool) -> Iterator[StreamEvent]:
        headers = {"Last-Event-ID": str(cursor)}
        params = {"include_pings": "true"} if include_pings else {}
        with connect_sse(self._c._http, "GET", f"/v1/runs/{run_id}/stream", headers=headers,
                         params=params, timeout=self._c._stream_timeout) as source:
            if not source.response.is_success:
                source.response.read()
                _raise_for(source.response)
            for sse in source.iter_sse():
                if not sse.data:  # a `: ping` comment (httpx-sse dispatches it, empty)
                    continue
                data = json.loads(sse.data)
                yield StreamEvent(run_id, data.get("seq_id") if sse.id else None,
                                  sse.event, data.get("data", data), data.get("at"))


class Approvals:
    def __init__(self, client: Client) -> None:
        self._c = client

    def decide(self, approval_id: str, approve: bool, *, reason: str | None = None,
               by: str | None = None) -> dict[str, Any]:
        """Approve or deny a pending tool call (409 ``ApiError`` if already decided)."""
        body: dict[str, Any] = {"approve": approve, "reason": reason}
        if by is not None:
            body["by"] = by
        result: dict[str, Any] = self._c.request("POST", f"/v1/approvals/{approval_id}",
                                                 json=body)
        return result
