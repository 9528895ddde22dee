"""Secrets (API keys, passwords in model URLs) never leave the process, in any encoding.

One mechanism, used wherever text leaves: a model adapter registers its secrets in
:data:`SECRETS` when it is built, and every exit masks them: error messages of the
HTTP adapters, the store's encoder (so no run error, event, message or step output
holds a key) and the CLI's stdout and stderr (results, logs, error lines).

A secret is masked in every form it takes on the way out: as is, stripped of
surrounding whitespace, repr-escaped (``'\\r'`` as ``\\r``, as in ``b'Bearer ...'``),
JSON-escaped and URL-encoded. The registry is process-wide on purpose: a key must be
masked even by code that never saw the model holding it (a log processor, the CLI's
last-resort error handler), and a process has one environment.

Only a value that can be a secret is masked (:func:`can_be_secret`): masking must never
change what printed text means, and the placeholder a local server's user sets because
the client wants some key (``none``, ``EMPTY``, ``sk-no-key-required``) is a word that
ordinary text holds too (``approved: none`` would read ``approved: ***``).
"""

from __future__ import annotations

import json
import re
import threading
import unicodedata
from collections.abc import Callable, Iterable
from typing import Any, TextIO
from urllib.parse import quote, quote_plus, unquote, urlsplit, urlunsplit

from orchestra._errors import UserError

__all__ = ["MASK", "SECRETS", "RedactingStream", "Secrets", "can_be_secret", "check_key",
           "mask_url", "redact", "url_secrets"]

MASK = "***"
MIN_SECRET_CHARS = 8
"""Shorter values are not masked: they would garble ordinary text and guard little (an
API key is 20 characters or more; a password this short is guessed, not leaked)."""
PLACEHOLDERS = frozenset({
    "none", "null", "nil", "empty", "no", "na", "n/a", "-", "x", "xxx", "dummy", "fake",
    "test", "testing", "placeholder", "unused", "not-needed", "not-used", "no-key", "nokey",
    "no-key-required", "sk-no-key-required", "sk-xxx", "sk-dummy", "sk-fake", "sk-local",
    "local", "anything", "any", "key", "apikey", "api-key", "api_key", "token", "secret",
    "password", "changeme", "your-api-key", "your_api_key", "ollama", "lm-studio",
    "lmstudio", "llama", "llama.cpp", "vllm", "sglang", "localai", "openai",
})
"""Values people set where a server needs no key but a client wants one (vLLM's docs say
``EMPTY``, llama.cpp's ``sk-no-key-required``, Ollama's ``ollama``), compared lower-cased."""
_WORD = re.compile(r"[A-Za-z]{1,12}")


_ENCODERS: tuple[Callable[[str], str], ...] = (
    lambda s: repr(s)[1:-1],
    lambda s: repr(s.encode("utf-8"))[2:-1],
    lambda s: json.dumps(s)[1:-1],
    lambda s: json.dumps(s, ensure_ascii=False)[1:-1],
    lambda s: quote(s, safe=""),
    quote,
    quote_plus,
)
_LONG_RUN = re.compile(r"[A-Za-z0-9]{12,}")


def encodings(secret: str) -> set[str]:
    """Every form ``secret`` can take in text that leaves the process: as is, stripped,
    without control characters, and each of those encoded once or twice (a repr inside
    a JSON document). Its long alphanumeric runs too: every encoding keeps them as they
    are, so they catch encodings nobody listed (a random run of 12 is no English word)."""
    forms = {secret, secret.strip(), "".join(c for c in secret if not _is_control(c))}
    once = {encode(form) for form in forms for encode in _ENCODERS}
    twice = {encode(form) for form in once for encode in _ENCODERS}
    runs = set(_LONG_RUN.findall(secret))
    return {f for f in forms | once | twice | runs if can_be_secret(f)}


def can_be_secret(value: str) -> bool:
    """Whether masking ``value`` wherever it occurs guards a secret without changing what
    text says: not a no-key placeholder, not shorter than :data:`MIN_SECRET_CHARS`, and
    not made of words (letters in one case, joined by ``-``, ``_``, ``.`` or spaces, as
    in ``not-needed``): a real key or password holds a digit, a symbol, mixed case, or a
    run of letters longer than a word."""
    text = value.strip()
    if len(text) < MIN_SECRET_CHARS or text.lower() in PLACEHOLDERS:
        return False
    return not all(_WORD.fullmatch(part) and (part.islower() or part.isupper()
                                              or part.istitle())
                   for part in re.split(r"[-_. ]", text))


class Secrets:
    """A set of secrets and the masking of all their encodings (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._secrets: set[str] = set()
        self._needles: tuple[str, ...] = ()  # longest first: a form inside another masks last

    def add(self, *secrets: str | None) -> None:
        """Register secrets (``None`` and values that cannot be one, see
        :func:`can_be_secret`, are ignored)."""
        with self._lock:
            new = {s for s in secrets if s and can_be_secret(s)} - self._secrets
            if not new:
                return
            self._secrets |= new
            needles = set(self._needles)
            for secret in new:
                needles |= encodings(secret)
            self._needles = tuple(sorted(needles, key=len, reverse=True))

    def redact(self, text: str) -> str:
        """``text`` with every encoding of every registered secret replaced by ``***``."""
        for needle in self._needles:
            if needle in text:
                text = text.replace(needle, MASK)
        return text

    def __bool__(self) -> bool:
        return bool(self._needles)


class RedactingStream:
    """A text stream that masks the process's secrets in everything written to it.

    The CLI wraps its stdout and stderr in one, so nothing it prints (a result, a log
    line, even an unexpected traceback) can carry a key. Everything else is delegated.
    """

    def __init__(self, stream: TextIO, secrets: Secrets) -> None:
        self._stream = stream
        self._secrets = secrets

    def write(self, text: str) -> int:
        self._stream.write(self._secrets.redact(text) if self._secrets else text)
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


SECRETS = Secrets()
"""The process's secrets: adapters add their keys here; every exit masks them."""


def redact(text: str, extra: Iterable[str | None] = ()) -> str:
    """``text`` masked of the process's secrets and of ``extra`` ones."""
    more = [s for s in extra if s and can_be_secret(s)]
    if more:
        local = Secrets()
        local.add(*more)
        text = local.redact(text)
    return SECRETS.redact(text)


def _is_control(char: str) -> bool:
    return unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp")


def check_key(value: str | None, source: str) -> str | None:
    """``value`` if it can be sent as a credential; a ``UserError`` naming ``source``
    (never the value) if it holds a control character, e.g. the ``\\r`` a CRLF
    ``.env`` file leaves at the end of a line."""
    if value is None:
        return None
    for position, char in enumerate(value):
        if _is_control(char):
            where = "at its end" if position >= len(value.rstrip()) else \
                f"at position {position + 1} of {len(value)}"
            hint = " (a .env file with Windows line endings?)" if char in "\r\n" else ""
            raise UserError(
                f"{source} contains a control character (U+{ord(char):04X}) {where}{hint}; "
                f"an API key is printable text: remove it and try again")
    return value


def url_secrets(url: str) -> tuple[str, ...]:
    """The credentials embedded in ``url`` (``http://user:secret@host``): the password,
    or the user when it stands alone (a token written as the user name)."""
    try:
        parts = urlsplit(url)
        user, password = parts.username, parts.password
    except ValueError:
        return ()
    found = password or user
    return tuple(dict.fromkeys((found, unquote(found)))) if found else ()


def mask_url(url: str) -> str:
    """``url`` with its embedded credentials shown as ``***`` (for names and messages)."""
    secrets = url_secrets(url)
    if not secrets:
        return url
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    user = parts.username if parts.password else None
    userinfo = f"{user}:{MASK}" if user is not None else MASK
    return urlunsplit(parts._replace(netloc=f"{userinfo}@{host}"))
