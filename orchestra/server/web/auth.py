"""The board's protection: a login that trades the server's token for a session
cookie (``HttpOnly``, ``SameSite=Strict``), and CSRF tokens on every form.

The cookie never holds the token itself: it holds a random nonce and its HMAC
under the token, so a stolen cookie does not reveal the token and a restarted
server with the same token keeps its sessions. A cookie opens the pages and the
API's reads (``EventSource`` cannot send a header); the API's writes still need
the bearer token, so a cookie alone never changes state except through the
board's own forms, which carry a CSRF token bound to the browser's nonce.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Mapping
from http.cookies import SimpleCookie

from starlette.types import ASGIApp, Receive, Scope, Send

from orchestra.server.problems import problem_body
from orchestra.server.security import BearerAuth

SESSION = "orchestra_session"
"""Cookie proving a login (set only when the server has a token)."""
NONCE = "orchestra_nonce"
"""Cookie with this browser's random nonce, the anchor of its CSRF tokens."""
PUBLIC = ("/login", "/static/")


def _mac(key: bytes, text: str) -> str:
    return hmac.new(key, text.encode(), hashlib.sha256).hexdigest()


class Secrets:
    """Keys of one server: from its token, or random per process when it has none."""

    def __init__(self, token: str | None) -> None:
        self.token = token
        base = token.encode() if token is not None else secrets.token_bytes(32)
        self._session_key = hashlib.sha256(b"orchestra session\0" + base).digest()
        self._csrf_key = hashlib.sha256(b"orchestra csrf\0" + base).digest()

    def new_session(self) -> str:
        nonce = secrets.token_urlsafe(18)
        return f"{nonce}.{_mac(self._session_key, nonce)}"

    def valid_session(self, cookie: str | None) -> bool:
        if not cookie or "." not in cookie:
            return False
        nonce, _, mac = cookie.partition(".")
        return hmac.compare_digest(mac, _mac(self._session_key, nonce))

    def csrf_token(self, nonce: str) -> str:
        return _mac(self._csrf_key, nonce)

    def valid_csrf(self, nonce: str | None, given: str | None) -> bool:
        return bool(nonce and given) and hmac.compare_digest(
            str(given), self.csrf_token(str(nonce)))

    def valid_token(self, given: str) -> bool:
        return self.token is not None and hmac.compare_digest(given.encode(),
                                                              self.token.encode())


def cookies(headers: Mapping[str, str] | list[tuple[bytes, bytes]]) -> dict[str, str]:
    """The request's cookies from its ``cookie`` header(s)."""
    raw = ([v.decode("latin-1") for k, v in headers if k == b"cookie"]
           if isinstance(headers, list) else [headers.get("cookie", "")])
    jar: SimpleCookie = SimpleCookie()
    for value in raw:
        try:
            jar.load(value)
        except Exception:  # a malformed cookie header: treat as no cookie
            continue
    return {k: m.value for k, m in jar.items()}


def cookie_header(name: str, value: str, *, max_age: int | None = None) -> str:
    """A ``Set-Cookie`` value: host-only, ``HttpOnly``, ``SameSite=Strict``."""
    age = f"; Max-Age={max_age}" if max_age is not None else ""
    return f"{name}={value}; Path=/; HttpOnly; SameSite=Strict{age}"


class WebAuth:
    """ASGI middleware in place of :class:`BearerAuth` when the server has a token.

    The login page and static files are open; a valid session cookie opens the
    pages and the API's GETs; anything else needs the bearer token, and a browser
    asking for a page (``Accept: text/html``) without either is sent to the login.
    """

    def __init__(self, app: ASGIApp, secrets_: Secrets) -> None:
        self.app = app
        self.bearer = BearerAuth(app, secrets_.token or "")
        self.secrets = secrets_

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        if path == "/login" or path.startswith("/static/"):
            await self.app(scope, receive, send)
            return
        headers: list[tuple[bytes, bytes]] = scope["headers"]
        has_bearer = any(k == b"authorization" for k, _ in headers)
        if not has_bearer and self.secrets.valid_session(cookies(headers).get(SESSION)):
            api_write = path.startswith("/v1/") and scope["method"] not in ("GET", "HEAD")
            if not api_write:
                await self.app(scope, receive, send)
                return
            await _refuse(send, 403, "the API's writes need the bearer token (a board "
                                     "session cookie only allows reads and the board's forms)")
            return
        wants_page = any(k == b"accept" and b"text/html" in v for k, v in headers)
        if not has_bearer and wants_page and not path.startswith("/v1/") \
                and scope["method"] == "GET":  # a browser: the login page, then back here
            query = scope.get("query_string", b"").decode("latin-1")
            target = path + (f"?{query}" if query else "")
            from urllib.parse import quote

            await send({"type": "http.response.start", "status": 303,
                        "headers": [(b"location", f"/login?next={quote(target)}".encode()),
                                    (b"content-length", b"0")]})
            await send({"type": "http.response.body", "body": b""})
            return
        await self.bearer(scope, receive, send)


async def _refuse(send: Send, status: int, detail: str) -> None:
    body = problem_body(status, detail)
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/problem+json"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
