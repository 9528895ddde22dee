"""``--server URL`` failures are one line naming what was tried and what to do, with
exit code 7 (2 for a URL that is not one), never a traceback (issue 27, item 3)."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from e2e_helpers import Result, cli

EXIT_SERVER, EXIT_USAGE = 7, 2


def _one_line(result: Result, code: int, *needles: str) -> None:
    assert result.code == code, result
    assert "Traceback" not in result.stderr, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("orchestra: error: "), result
    for needle in needles:
        assert needle in lines[0], result


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _Stub(BaseHTTPRequestHandler):
    """A server that answers every GET with the class's status, type and body."""

    status, content_type, body = 200, "application/json", b"{}"

    def do_GET(self) -> None:
        self.send_response(self.status)
        self.send_header("Content-Type", self.content_type)
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def stub() -> Iterator[tuple[str, type[_Stub]]]:
    handler = type("Handler", (_Stub,), {})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", handler
    finally:
        server.shutdown()
        server.server_close()


def test_nothing_listening_and_no_scheme() -> None:
    url = f"http://127.0.0.1:{_free_port()}"
    _one_line(cli("runs", "--server", url), EXIT_SERVER, f"cannot reach {url}",
              "is `orchestra serve` running")
    bare = url.removeprefix("http://")
    _one_line(cli("show", "abc", "--server", bare), EXIT_USAGE, f"did you mean {url}?")


def test_a_refused_token(stub: tuple[str, type[_Stub]]) -> None:
    url, handler = stub
    handler.status, handler.content_type = 401, "application/problem+json"
    handler.body = json.dumps({"status": 401, "detail": "missing bearer token"}).encode()
    _one_line(cli("runs", "--server", url), EXIT_SERVER, "refused the token",
              "ORCHESTRA_TOKEN")


@pytest.mark.parametrize(("status", "content_type", "body"), [
    (404, "application/json", b'{"detail": "Not Found"}'),  # no such route: another API
    (200, "text/html", b"<html>hello</html>"),  # not JSON at all
    (200, "application/json", b'{"items": []}'),  # JSON of another shape
])
def test_a_server_of_another_version(stub: tuple[str, type[_Stub]], status: int,
                                     content_type: str, body: bytes) -> None:
    url, handler = stub
    handler.status, handler.content_type, handler.body = status, content_type, body
    _one_line(cli("runs", "--server", url), EXIT_SERVER, "another version")
