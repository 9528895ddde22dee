"""Who may call the API and how much they may send.

A bearer token guards every endpoint when one is configured (compared in
constant time, never logged); a server refuses to listen beyond loopback
without one. Request bodies over the limit are refused with 413 before any
endpoint sees them.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
from collections.abc import Mapping
from pathlib import Path

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from orchestra._errors import UserError
from orchestra.server.problems import PROBLEM, problem_body


def load_token(token_file: str | None, environ: Mapping[str, str] = os.environ) -> str | None:
    """The token from ``--token-file`` (first line) or ``$ORCHESTRA_TOKEN``; ``None`` if unset."""
    if token_file:
        try:
            token = Path(token_file).read_text().strip()
        except OSError as exc:
            raise UserError(f"cannot read --token-file {token_file}: {exc.strerror}") from exc
        if not token:
            raise UserError(f"--token-file {token_file} is empty; put the token on its "
                            "first line")
        return token
    return environ.get("ORCHESTRA_TOKEN") or None


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: it may resolve anywhere


def check_bind(host: str, token: str | None) -> None:
    """Refuse to expose an unauthenticated API beyond this machine."""
    if token is None and not is_loopback(host):
        raise UserError(f"refusing to listen on {host} without a token: anyone who can reach "
                        "it could start runs and approve tool calls; set ORCHESTRA_TOKEN or "
                        "pass --token-file FILE (or listen on 127.0.0.1)")


async def _send_problem(send: Send, status: int, detail: str,
                        headers: tuple[tuple[bytes, bytes], ...] = ()) -> None:
    body = problem_body(status, detail)
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", PROBLEM.encode()),
                            (b"content-length", str(len(body)).encode()), *headers]})
    await send({"type": "http.response.body", "body": body})


class BearerAuth:
    """ASGI middleware: ``Authorization: Bearer <token>`` on every request, or 401."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = b""
        for name, value in scope["headers"]:
            if name == b"authorization":
                given = value
                break
        if not hmac.compare_digest(given, self._expected):
            what = "wrong" if given else "missing"
            await _send_problem(send, 401, f"{what} bearer token: send 'Authorization: Bearer "
                                "<token>' with the server's token",
                                ((b"www-authenticate", b"Bearer"),))
            return
        await self.app(scope, receive, send)


class BodyLimit:
    """ASGI middleware: a request body over ``limit`` bytes gets 413, read no further."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        for name, value in scope["headers"]:
            if name == b"content-length" and value.isdigit() and int(value) > self.limit:
                await self._refuse(send)
                return
        chunks: list[bytes] = []
        size = 0
        while True:  # bounded by the limit: buffer, then replay to the app
            message = await receive()
            if message["type"] != "http.request":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.limit:
                await self._refuse(send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body, sent = b"".join(chunks), False

        async def replay() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, send: Send) -> None:
        await _send_problem(send, 413, f"request body over {self.limit} bytes; send a smaller "
                                       "input (or start the server with a larger --max-body)")
