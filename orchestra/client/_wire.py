"""What the sync and async clients share: every endpoint's request (``RunsApi``,
``ApprovalsApi``: built once, carried out by either client's ``send``), answers, stream
frames, and the reconnect policy of a stream."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import httpx
from httpx_sse import ServerSentEvent

from orchestra._errors import OrchestraError
from orchestra._types import run_finished_after


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


def raise_for(response: httpx.Response) -> None:
    if response.is_success:
        return
    try:
        doc = response.json()
        detail = str(doc.get("detail", response.text))
    except (ValueError, AttributeError):
        doc, detail = None, response.text or response.reason_phrase
    raise ApiError(response.status_code, detail, doc if isinstance(doc, dict) else None)


Answer = TypeVar("Answer")
"""What a client's ``send`` gives back: the decoded JSON (``Client``), or an awaitable
of it (``AsyncClient``)."""
Send = Callable[[str, str, dict[str, Any]], Answer]
"""``send(method, path, httpx keyword arguments)``: one request; raises ``ApiError``."""


class RunsApi(Generic[Answer]):
    """The run endpoints, each a request built once for both clients."""

    def __init__(self, send: Send[Answer]) -> None:
        self._send = send

    def create(self, pipeline: str, input: dict[str, Any] | None = None, *,
               model: str | dict[str, str] | None = None,
               max_tokens: int | None = None) -> Answer:
        """Start a run in the background: ``{"run_id", "status"}``."""
        body: dict[str, Any] = {"pipeline": pipeline, "input": input or {}}
        if model is not None:
            body["model"] = model
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        return self._send("POST", "/v1/runs", {"json": body})

    def list(self, *, active: bool = False, status: str | None = None,
             pipeline: str | None = None, limit: int = 50,
             cursor: str | None = None) -> Answer:
        """One page, newest first: ``{"runs": [...], "next_cursor": ...}``."""
        params: dict[str, Any] = {"active": str(active).lower(), "limit": limit}
        for key, value in (("status", status), ("pipeline", pipeline), ("cursor", cursor)):
            if value is not None:
                params[key] = value
        return self._send("GET", "/v1/runs", {"params": params})

    def get(self, run_id: str) -> Answer:
        """Status, steps, per-agent state and usage (the polling endpoint)."""
        return self._send("GET", f"/v1/runs/{run_id}", {})

    def cancel(self, run_id: str) -> Answer:
        """Cancel the run: ``{"run_id", "status"}``."""
        return self._send("POST", f"/v1/runs/{run_id}/cancel", {})

    def resume(self, run_id: str, *, max_tokens: int | None = None) -> Answer:
        """Continue the run in the background (``max_tokens``: its new token cap; a run
        paused by its cap needs one above what it used, else a 409 ``ApiError``)."""
        body = {"max_tokens": max_tokens} if max_tokens is not None else None
        return self._send("POST", f"/v1/runs/{run_id}/resume", {"json": body})

    def approvals(self, run_id: str, *, status: str | None = None) -> Answer:
        """The run's approvals, optionally only those with ``status``: ``{"approvals":
        [...], "next_cursor": null}`` (every list has this envelope)."""
        params = {"status": status} if status else {}
        return self._send("GET", f"/v1/runs/{run_id}/approvals", {"params": params})


class ApprovalsApi(Generic[Answer]):
    """Deciding approvals, a request built once for both clients."""

    def __init__(self, send: Send[Answer]) -> None:
        self._send = send

    def decide(self, approval_id: str, approve: bool, *, reason: str | None = None,
               by: str | None = None) -> Answer:
        """Approve or deny a pending tool call (409 ``ApiError`` if already decided)."""
        body: dict[str, Any] = {"approve": approve, "reason": reason}
        if by is not None:
            body["by"] = by
        return self._send("POST", f"/v1/approvals/{approval_id}", {"json": body})


def stream_request(cursor: int, include_pings: bool, tokens: bool = True) -> dict[str, Any]:
    """The keyword arguments of one (re)connection from ``cursor``."""
    params = ({"include_pings": "true"} if include_pings else {}) | (
        {} if tokens else {"tokens": "0"})
    return {"headers": {"Last-Event-ID": str(cursor)}, "params": params}


def to_event(run_id: str, sse: ServerSentEvent) -> StreamEvent | None:
    """A frame as a ``StreamEvent``; ``None`` for a ``: ping`` comment (httpx-sse hands
    those over as empty events)."""
    if not sse.data:
        return None
    data = json.loads(sse.data)
    # only events carry ``seq_id`` (httpx-sse repeats the last ``id:`` on id-less frames)
    return StreamEvent(run_id, data.get("seq_id"), sse.event, data.get("data", data),
                       data.get("at"))


class Reconnect:
    """Where a stream is, and how long to wait before its next connection attempt."""

    def __init__(self, run_id: str, cursor: int, max_wait: float,
                 give_up_after: float | None) -> None:
        self.run_id, self.cursor = run_id, cursor
        self._max_wait, self._give_up = max_wait, give_up_after
        self._wait, self._progress = 0.1, time.monotonic()
        self.finished = False
        """The run is finished as of the last event delivered (the server then ends
        the stream; a stream that ends before that was cut, and is resumed)."""

    def delivered(self, event: StreamEvent) -> None:
        if event.seq is not None:
            self.cursor, self._wait, self._progress = event.seq, 0.1, time.monotonic()
            self.finished = run_finished_after(event.kind, self.finished)

    def after_error(self, exc: BaseException, reconnect: bool) -> float:
        """Seconds to wait before reconnecting after ``exc``; raises it (as ``ApiError``)
        if it is no reason to reconnect: a refusal, or ``reconnect`` is off."""
        if not reconnect or not retryable(exc):
            if isinstance(exc, ApiError):
                raise exc
            raise ApiError(0, f"stream of run {self.run_id} broke: {exc}") from exc
        return self.next_wait(exc)

    def next_wait(self, cause: BaseException | None) -> float:
        """Seconds to wait before reconnecting; raises once it is time to give up."""
        if self._give_up is not None and time.monotonic() - self._progress > self._give_up:
            raise ApiError(0, f"stream of run {self.run_id}: no event for "
                              f"{self._give_up:.0f} s and the server is unreachable (last "
                              f"event {self.cursor})") from cause
        wait, self._wait = self._wait, min(self._wait * 2, self._max_wait)
        return wait


def retryable(exc: BaseException) -> bool:
    """A dropped connection or a server error: worth reconnecting for."""
    return not isinstance(exc, ApiError) or exc.status >= 500 or exc.status == 0
