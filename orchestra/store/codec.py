"""Encoding values for the store: compact JSON, the payload size limit, new ids."""

from __future__ import annotations

import json
import os

from orchestra._errors import PayloadTooLargeError, UserError
from orchestra._secrets import SECRETS
from orchestra._types import JSON, MESSAGE_ROLES, Message

_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def compact(value: JSON) -> str:
    """Compact JSON of parts already encoded and checked (no limit, no redaction)."""
    return _ENCODER.encode(value)


def new_id(length: int = 16) -> str:
    """A random hex id from ``os.urandom`` (what ``uuid4`` draws on, without building a
    UUID); runs use 12 characters, everything else 16."""
    return os.urandom((length + 1) // 2).hex()[:length]


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
            text = _ENCODER.encode(value)
        except (TypeError, ValueError) as exc:
            raise UserError(f"{field} is not JSON-serializable: {exc}") from exc
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
