"""A scripted HTTP server on 127.0.0.1 that speaks the providers' wire formats.

Each test scripts the replies (status, headers, body) and then inspects the request
bodies the adapter sent. No network beyond loopback; no aiohttp.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SECRET = "sk-test-SECRET-0123456789abcdef"

MODEL_ENV = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_COMPATIBLE_API_KEY", "ANTHROPIC_API_KEY",
             "ANTHROPIC_BASE_URL", "ANTHROPIC_AUTH_TOKEN", "OLLAMA_BASE_URL", "ORCHESTRA_MODEL")


@dataclass
class Reply:
    """One scripted HTTP reply; ``body`` is JSON-encoded unless it is bytes."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    events: list[tuple[float, Any]] | None = None
    """A streamed reply instead: (seconds to wait, chunk) pairs sent as server-sent
    events (``data: <json>``), then ``data: [DONE]``."""
    named: bool = False
    """Stream as Anthropic does: each event named by its chunk's ``type``
    (``event: <type>``), and no ``[DONE]``."""


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: Any


class WireServer:
    """Pops a scripted reply per POST and records what was sent; answers a GET from
    ``pages`` (by path; 404 otherwise). ``judge``, when set, sees each POST body first
    and may answer it instead of the script (a server that checks what it is sent)."""

    def __init__(self) -> None:
        self.script: list[Reply] = []
        self.received: list[Received] = []
        self.pages: dict[str, Reply] = {}
        self.fetched: list[Received] = []
        """The GETs made, in order."""
        self.judge: Callable[[Any], Reply | None] | None = None
        self.in_flight = self.max_in_flight = 0
        """Requests being answered now, and the most there ever were at once."""
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                with outer._lock:
                    outer.in_flight += 1
                    outer.max_in_flight = max(outer.max_in_flight, outer.in_flight)
                try:
                    self._answer()
                finally:
                    with outer._lock:
                        outer.in_flight -= 1

            def do_GET(self) -> None:
                with outer._lock:
                    outer.fetched.append(Received(
                        self.path, {k.lower(): v for k, v in self.headers.items()}, None))
                    reply = outer.pages.get(self.path) or Reply(
                        404, {"error": {"message": f"File Not Found: {self.path}"}})
                self._send(reply)

            def _answer(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = raw.decode(errors="replace")
                judged = outer.judge(body) if outer.judge is not None else None
                with outer._lock:
                    outer.received.append(Received(
                        self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                    reply = judged or (outer.script.pop(0) if outer.script else Reply(
                        500, {"error": {"message": "test script exhausted"}}))
                self._send(reply)

            def _send(self, reply: Reply) -> None:
                if reply.delay:
                    time.sleep(reply.delay)
                if reply.events is not None:
                    self._stream(reply)
                    return
                data = reply.body if isinstance(reply.body, bytes) else json.dumps(
                    reply.body).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)

            def _stream(self, reply: Reply) -> None:
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", "text/event-stream")
                    self.send_header("connection", "close")
                    self.end_headers()
                    done = [] if reply.named else [(0.0, "[DONE]")]
                    for wait, chunk in [*(reply.events or []), *done]:
                        time.sleep(wait)
                        text = chunk if isinstance(chunk, str) else json.dumps(chunk)
                        name = f"event: {chunk['type']}\n" if reply.named else ""
                        self.wfile.write(f"{name}data: {text}\n\n".encode())
                        self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass
                self.close_connection = True

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.01,),
                                        daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def count(self) -> int:
        return len(self.received)

    @property
    def last(self) -> Any:
        return self.received[-1].body

    def add(self, *replies: Reply) -> None:
        self.script.extend(replies)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class SleepRecorder:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


def anthropic_streamed(message: dict[str, Any]) -> Reply:
    """``message`` (a whole Messages API reply) streamed as the API streams it: named
    events, text in pieces, a tool's input JSON in pieces, output tokens at the end."""
    usage = dict(message["usage"])
    start = {**message, "content": [], "stop_reason": None, "usage": {**usage,
                                                                      "output_tokens": 1}}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            events.append({"type": "content_block_start", "index": index,
                           "content_block": {"type": "text", "text": ""}})
            events += [{"type": "content_block_delta", "index": index,
                        "delta": {"type": "text_delta", "text": block["text"][i:i + 5]}}
                       for i in range(0, len(block["text"]), 5)]
        else:
            raw = json.dumps(block["input"])
            events.append({"type": "content_block_start", "index": index,
                           "content_block": {**block, "input": {}}})
            events += [{"type": "content_block_delta", "index": index,
                        "delta": {"type": "input_json_delta", "partial_json": raw[i:i + 5]}}
                       for i in range(0, len(raw), 5)]
        events.append({"type": "content_block_stop", "index": index})
    events += [{"type": "message_delta", "delta": {"stop_reason": message["stop_reason"],
                                                   "stop_sequence": None},
                "usage": {"output_tokens": usage["output_tokens"]}},
               {"type": "message_stop"}]
    return Reply(events=[(0.0, e) for e in events], named=True)
