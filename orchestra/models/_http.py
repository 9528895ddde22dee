"""The failure policy shared by the HTTP adapters.

Both SDK adapters run with the SDK's own retries off and use this module, so every
provider retries the same failures the same way: exponential backoff with jitter on
429/408/409/5xx, connection errors (not a refusal on this machine: nothing listens
there, and waiting will not start it), timeouts and truncated bodies, honouring
``Retry-After`` (seconds or an HTTP date) and ``retry-after-ms``; never on other 4xx.

Error messages name the model and the base URL and say what to do. They are built
from the status, the server's own message and the exception type only: never from
headers, and every configured secret is masked in every encoding (``orchestra._secrets``),
so an API key cannot leak into a log line, a traceback or the store. A key holding a
control character is refused when it is loaded (``load_key``), before any request.
"""

from __future__ import annotations

import asyncio
import email.utils
import errno
import ipaddress
import json
import os
import random
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import urlsplit

from orchestra._errors import ContextOverflowError, ModelAPIError
from orchestra._log import get_logger
from orchestra._secrets import SECRETS, check_key, mask_url, url_secrets
from orchestra._secrets import redact as _redact
from orchestra.models._context import refusal_sizes

T = TypeVar("T")

_log = get_logger("orchestra.models")

RETRYABLE_STATUSES: frozenset[int] = frozenset({408, 409, 429})
"""4xx statuses worth retrying; every 5xx (including Anthropic's 529) is retried too."""

_DETAIL_LIMIT = 300


@dataclass(frozen=True, slots=True)
class Backoff:
    """How long to wait between attempts of one model call."""

    base_delay: float = 0.5
    """Seconds before the first retry; doubles on each further retry."""
    max_delay: float = 20.0
    """Upper bound of one computed wait (before jitter)."""
    max_retry_after: float = 60.0
    """A server's ``Retry-After`` above this is not waited out: the error is raised
    (still ``retryable``) so the task-level retry can pick it up later."""
    sleep: Callable[[float], Awaitable[None]] = field(default=asyncio.sleep, repr=False)
    """The sleep function; tests inject a recorder to stay fast."""

    def delay(self, retry: int) -> float:
        """Seconds to wait before retry number ``retry`` (1-based), with jitter."""
        ceiling = min(self.max_delay, self.base_delay * 2.0 ** (retry - 1))
        return ceiling * (0.5 + random.random() / 2)


@dataclass(frozen=True, slots=True)
class Failure:
    """A classified failed attempt: the error to raise and the server's requested wait."""

    error: ModelAPIError
    retry_after: float | None = None


def redact(text: str, secrets: Iterable[str | None]) -> str:
    """``text`` with every encoding of ``secrets`` and of the process's secrets masked."""
    return _redact(text, secrets)


def load_key(api_key: str | None, env_var: str) -> str | None:
    """The API key from ``api_key``, else from ``$env_var``; one holding a control
    character (a CRLF ``.env`` file's ``\\r``) is refused naming its source, not its value."""
    if api_key:
        return check_key(api_key, "api_key=...")
    return check_key(os.environ.get(env_var) or None, f"${env_var}")


def parse_retry_after(headers: Mapping[str, str] | None, *,
                      now: float | None = None) -> float | None:
    """Seconds the server asked us to wait, from ``retry-after-ms`` or ``Retry-After``."""
    if not headers:
        return None
    lowered = {k.lower(): v for k, v in headers.items()}
    millis = lowered.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def server_detail(body: object, fallback: str = "", secrets: Iterable[str | None] = ()) -> str:
    """The server's own error message from a decoded error body, masked, then shortened
    (masking first: a cut through a key would leave its unmasked head)."""
    detail: object = fallback
    if isinstance(body, Mapping):
        error = body.get("error", body)
        if isinstance(error, Mapping):
            detail = error.get("message") or error.get("detail") or error
        elif error:
            detail = error
    elif body:
        detail = body
    text = redact(" ".join(str(detail).split()), secrets)
    return text if len(text) <= _DETAIL_LIMIT else text[: _DETAIL_LIMIT - 3] + "..."


@dataclass(frozen=True, slots=True)
class Endpoint:
    """What an error message says about where a call went (never the key itself)."""

    model: str
    base_url: str
    key_env: str
    provider: str = "OpenAI-compatible"
    secrets: tuple[str, ...] = field(default=(), repr=False)

    def __post_init__(self) -> None:
        # the key and any password in the URL are masked wherever text leaves the process
        SECRETS.add(*self.secrets, *url_secrets(self.base_url))

    @property
    def label(self) -> str:
        return f"{self.provider} model {self.model!r} at {mask_url(self.base_url)}"

    def status_failure(self, status: int, body: object, headers: Mapping[str, str] | None,
                       fallback: str = "") -> Failure:
        """Turn an HTTP error status into a helpful ``ModelAPIError`` (no headers, no key)."""
        detail = server_detail(body, fallback, self.secrets)
        said = f"HTTP {status}: {detail}" if detail else f"HTTP {status}"
        retryable = status in RETRYABLE_STATUSES or status >= 500
        if status == 401:
            advice = f"the server refused the API key ({said}). Check {self.key_env}."
        elif status == 403:
            advice = f"access denied ({said}). Check that {self.key_env} may use this model."
        elif status == 404:
            advice = (f"model or endpoint not found ({said}). Check the model name "
                      f"{self.model!r} and the base URL.")
        elif status == 429:
            advice = f"rate limited ({said}). Wait and resume the run, or lower concurrency."
        elif status == 529:
            advice = f"the provider is overloaded ({said}). Resume the run later."
        elif status >= 500:
            advice = f"server error ({said}). Resume the run later if it persists."
        elif status in (400, 413) and (sizes := refusal_sizes(body, fallback)) is not None:
            return Failure(ContextOverflowError(
                f"{self.label}: the request is longer than the model's context ({said}). "
                "A role's request is refitted once to the window the server names; past "
                "that, lower the role's max_tokens or keep less of its history in view.",
                model=self.model, status=status, context_tokens=sizes[0],
                prompt_tokens=sizes[1]))
        else:
            advice = f"the request was rejected ({said})."
        error = ModelAPIError(f"{self.label}: {advice}", model=self.model,
                              retryable=retryable, status=status)
        return Failure(error, parse_retry_after(headers) if retryable else None)

    def unreachable(self, cause: BaseException) -> Failure:
        reason = redact(f"{type(cause).__name__}: {cause}", self.secrets)
        if type(cause).__name__ == "LocalProtocolError":  # httpx refused to send it at all
            return Failure(ModelAPIError(
                f"{self.label}: the request could not be sent ({reason}). Check the API key "
                f"({self.key_env}) and the base URL.", model=self.model, retryable=False))
        if _refused(cause) and _is_local(self.base_url):
            # nothing listens on this machine's port: no backoff makes a server start
            return Failure(ModelAPIError(
                f"{self.label}: connection refused ({reason}): nothing listens at "
                f"{mask_url(self.base_url)}. Start the model server there, or fix the URL "
                f"in the model spec.", model=self.model, retryable=False))
        return Failure(ModelAPIError(
            f"{self.label}: cannot connect ({reason}). Is the server running at "
            f"{mask_url(self.base_url)}?",
            model=self.model, retryable=True))

    def timed_out(self, timeout: float) -> Failure:
        return Failure(ModelAPIError(
            f"{self.label}: no answer within {timeout:g} s. Raise the timeout or check the "
            "server's load.", model=self.model, retryable=True))

    def malformed(self, cause: BaseException) -> Failure:
        reason = redact(str(cause), self.secrets)[:_DETAIL_LIMIT]  # masked, then cut
        return Failure(ModelAPIError(
            f"{self.label}: the server answered with a malformed JSON body ({reason}). Check "
            f"that {mask_url(self.base_url)} is the provider's API endpoint.",
            model=self.model, retryable=True))

    def bad_shape(self, problem: str) -> ModelAPIError:
        return ModelAPIError(f"{self.label}: unexpected response: {problem}.",
                             model=self.model, retryable=False)


def _refused(exc: BaseException | None) -> bool:
    """Whether a connection error was a refusal (the SDKs wrap the OSError a few deep)."""
    for _ in range(8):
        if exc is None:
            return False
        if isinstance(exc, ConnectionRefusedError) or \
                (isinstance(exc, OSError) and exc.errno == errno.ECONNREFUSED):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def _is_local(base_url: str) -> bool:
    """Whether ``base_url`` names this machine (a refusal there is not a passing fault)."""
    host = urlsplit(base_url).hostname or ""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified


async def call_with_retries(attempt: Callable[[], Awaitable[T]],
                            classify: Callable[[Exception], Failure | None], *,
                            max_retries: int, backoff: Backoff, model: str) -> T:
    """Run ``attempt`` until it succeeds, a failure is final, or retries run out.

    ``classify`` maps an exception to a :class:`Failure`, or to ``None`` to let it
    propagate untouched (e.g. a signal the adapter handles itself).
    """
    retry = 0
    while True:
        try:
            return await attempt()
        except Exception as exc:
            failure = classify(exc)
            if failure is None:
                text = str(exc)
                if redact(text, ()) != text:  # never let a secret ride out on an exception
                    raise ModelAPIError(f"{model}: {type(exc).__name__}: {redact(text, ())}",
                                        model=model) from None
                raise
        error = failure.error
        wait = failure.retry_after
        too_long = wait is not None and wait > backoff.max_retry_after
        if not error.retryable or retry >= max_retries or too_long:
            if retry:
                error.args = (f"{error} (gave up after {retry + 1} attempts)",)
            raise error from None  # the SDK exception carries the request headers
        retry += 1
        delay = wait if wait is not None else backoff.delay(retry)
        _log.warning("model.retry", model=model, retry=retry, status=error.status,
                     delay=round(delay, 3), error=str(error))
        await backoff.sleep(delay)


def header_map(headers: Any) -> dict[str, str]:
    """A plain dict of an SDK response's headers (empty when there are none)."""
    try:
        return {str(k): str(v) for k, v in headers.items()}
    except AttributeError:
        return {}


def classify_sdk_error(sdk: Any, endpoint: Endpoint, exc: Exception,
                       timeout: float) -> Failure | None:
    """Map an exception of the official openai/anthropic SDKs (same class names) to a
    ``Failure``; None for anything else (it propagates as is)."""
    if isinstance(exc, sdk.APITimeoutError):
        return endpoint.timed_out(timeout)
    if isinstance(exc, sdk.APIConnectionError):
        return endpoint.unreachable(exc.__cause__ or exc)
    if isinstance(exc, sdk.APIStatusError):
        return endpoint.status_failure(
            exc.status_code, exc.body, header_map(exc.response.headers), exc.message)
    if isinstance(exc, json.JSONDecodeError):
        return endpoint.malformed(exc)
    return None
