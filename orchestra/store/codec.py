"""Encoding values for the store: compact JSON, the payload size limit, new ids."""

from __future__ import annotations

import json
import os
import threading
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]

from orchestra._errors import PayloadTooLargeError, UserError
from orchestra._secrets import SECRETS
from orchestra._types import JSON, MESSAGE_ROLES, Message

_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False,
                            check_circular=False)


def _unencodable(value: object) -> object:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


# ``_ENCODER``'s C encoder, made once: ``JSONEncoder.encode`` makes one per call, and a
# step encodes about eleven values (half the cost of each). A value that refers to itself
# recurses until ``RecursionError`` (no circular check), which ``Encoder.json`` reports.
_C_ENCODE = (None if c_make_encoder is None else
             c_make_encoder(None, _unencodable, encode_basestring, None, ":", ",", False,
                            False, False))


def _dumps(value: JSON) -> str:
    if _C_ENCODE is None:
        return _ENCODER.encode(value)
    if isinstance(value, str):
        return encode_basestring(value)
    return "".join(_C_ENCODE(value, 0))


def compact(value: JSON) -> str:
    """Compact JSON of parts already encoded and checked (no limit, no redaction)."""
    return _dumps(value)


class _RandomBytes:
    """``os.urandom``'s bytes drawn :data:`_DRAW` at a time and handed out in order: a
    step makes two or three ids, and ``os.urandom`` releases the GIL, which the store's
    threads then take: in a busy worker an id cost ~12 µs of waiting for it back (0.4 µs
    alone). Each byte is handed out once (a lock, for threads); a forked child draws
    afresh, so it never repeats its parent's."""

    __slots__ = ("_at", "_lock", "_pool")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pool, self._at = b"", 0

    def take(self, n: int) -> bytes:
        with self._lock:
            if self._at + n > len(self._pool):
                self._pool, self._at = os.urandom(max(_DRAW, n)), 0
            start, self._at = self._at, self._at + n
            return self._pool[start:self._at]

    def forget(self) -> None:
        self._lock = threading.Lock()
        self._pool, self._at = b"", 0


_DRAW = 4096
_RANDOM = _RandomBytes()
os.register_at_fork(after_in_child=_RANDOM.forget)


def new_id(length: int = 16) -> str:
    """A random hex id from ``os.urandom`` (what ``uuid4`` draws on, without building a
    UUID); runs use 12 characters, everything else 16."""
    return _RANDOM.take((length + 1) // 2).hex()[:length]


def short(text: str | None, limit: int = 200) -> str | None:
    """Keep event data small: errors are quoted in events only up to ``limit`` characters."""
    if text is None or len(text) <= limit:
        return text
    return text[: limit - 1] + "…"


class Encoder:
    """Serializes payloads and refuses any over ``max_payload_bytes`` (encoded size).

    Every text it passes is masked of the process's secrets (``orchestra._secrets``):
    an API key never reaches the file, whatever error or reply carried it.

    ``field`` names what is being written so the error says which payload was too big.
    """

    __slots__ = ("limit",)

    def __init__(self, limit: int) -> None:
        if limit <= 0:
            raise UserError(f"max_payload_bytes must be positive, got {limit}")
        self.limit = limit

    def json(self, value: JSON, field: str) -> str:
        try:
            text = _dumps(value)
        except (TypeError, ValueError) as exc:
            raise UserError(f"{field} is not JSON-serializable: {exc}") from exc
        except RecursionError as exc:
            raise UserError(f"{field} is not JSON-serializable: it contains itself, or is "
                            "nested too deep") from exc
        if SECRETS:
            text = SECRETS.redact(text)
        self.check(text, field)
        return text

    def text(self, value: str, field: str) -> str:
        if not isinstance(value, str):
            raise UserError(f"{field} must be a str, got {type(value).__name__}")
        if SECRETS:
            value = SECRETS.redact(value)
        self.check(value, field)
        return value

    def optional_text(self, value: str | None, field: str) -> str | None:
        return None if value is None else self.text(value, field)

    def check(self, text: str, field: str) -> None:
        # A str of n characters encodes to at most 4n UTF-8 bytes: skip encoding small ones.
        if len(text) * 4 <= self.limit:
            return
        size = len(text.encode("utf-8", "surrogatepass"))
        if size > self.limit:
            raise PayloadTooLargeError(
                f"{field} is {size} bytes, over the store's limit of {self.limit} bytes "
                "(max_payload_bytes); nothing was written. Store large artifacts in files "
                "and pass their paths, or raise the limit."
            )


_MESSAGE_ROLES = frozenset(MESSAGE_ROLES)


def encode_message(enc: Encoder, m: Message, field: str) -> tuple[str, str | None]:
    """A message's stored content and tool calls (JSON), checked: its role is one of the
    vocabulary's, each text within the payload limit and redacted."""
    if m.role not in _MESSAGE_ROLES:
        raise UserError(f"message role must be one of {sorted(_MESSAGE_ROLES)}, got {m.role!r}")
    calls = None
    if m.tool_calls:
        calls = enc.json([{"id": c.id, "name": c.name, "arguments": c.arguments}
                          for c in m.tool_calls], field + " tool_calls")
    return enc.text(m.content, field + " content"), calls
