"""What a ``--server URL`` failure means to the user, in one line: what was tried, what
failed, and what to do. Shared by every command that talks to ``orchestra serve``."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from urllib.parse import urlsplit

from orchestra._errors import NotFoundError, ServerError, UserError

API_ROUTE_MISSING = "Not Found"
"""The detail of a 404 for a path the server has no route for (not a missing run)."""


def server_url(url: str) -> str:
    """``url`` without a trailing slash, refused at once if it is not an http(s) URL."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        guess = url if "://" in url else f"http://{url}"
        if "://" in url:
            guess = "http://" + url.split("://", 1)[1]
        raise UserError(f"--server {url!r} is not an http:// or https:// URL; "
                        f"did you mean {guess.rstrip('/')}?")
    return url.rstrip("/")


@contextlib.contextmanager
def translated(base: str) -> Iterator[None]:
    """Turn the client's transport and HTTP failures into one-line orchestra errors."""
    import httpx

    from orchestra.client import ApiError

    try:
        yield
    except httpx.TransportError as exc:
        raise ServerError(f"cannot reach {base} ({type(exc).__name__}: {exc or 'no answer'}); "
                          f"is `orchestra serve` running at {base}? Start one with "
                          "`orchestra serve --db FILE`, or pass another --server") from None
    except ApiError as exc:
        if exc.status == 401:
            raise ServerError(f"{base} refused the token ({exc.detail}): set ORCHESTRA_TOKEN "
                              "to the token that `orchestra serve` was started with",
                              status=401) from None
        if exc.status == 403:
            raise ServerError(f"{base} forbids this request ({exc.detail})", status=403) from None
        if not exc.problem or (exc.status == 404 and exc.detail == API_ROUTE_MISSING):
            raise _another_version(base, f"HTTP {exc.status}: {exc.detail[:80]}") from None
        if exc.status == 404:
            raise NotFoundError(exc.detail) from None
        if 400 <= exc.status < 500:
            raise UserError(f"{base}: {exc.detail}") from None
        raise ServerError(f"{base} failed: {exc}") from None
    except (json.JSONDecodeError, KeyError) as exc:  # an answer of another shape
        raise _another_version(base, f"{type(exc).__name__}: {exc}") from None


def _another_version(base: str, what: str) -> ServerError:
    return ServerError(f"{base} does not answer like this orchestra's `orchestra serve` "
                       f"({what}); is it another program, or orchestra of another version? "
                       "Use a server and client of the same version")
