"""An MCP tool result as the journal records it and the model reads it.

Text blocks are kept as text; ``structuredContent`` is kept as JSON (and shown when
there is no text); images, audio and binary resources are recorded by reference (type,
MIME type, size and digest), never as base64 in the journal.
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

MAX_CHARS = 64_000


def record_result(result: Any) -> dict[str, Any]:
    """The SDK's ``CallToolResult`` as a tool step's output (``content``, ``is_error``)."""
    texts: list[str] = []
    binaries: list[dict[str, Any]] = []
    for block in result.content:
        kind = getattr(block, "type", "?")
        if kind == "text":
            texts.append(block.text)
        elif kind in ("image", "audio"):
            binaries.append(_binary(kind, block.mime_type, block.data))
        elif kind == "resource_link":
            texts.append(f"[resource {block.uri}]")
        elif kind == "resource":
            res = block.resource
            if getattr(res, "text", None) is not None:
                texts.append(res.text)
            else:
                binaries.append(_binary("resource", res.mime_type or "application/octet-stream",
                                        res.blob, uri=str(res.uri)))
        else:
            texts.append(f"[{kind} content not shown]")
    texts += [f"[{b['type']} {b['mimeType']}, {b['bytes']} bytes, not shown"
              + (f": {b['uri']}" if "uri" in b else "") + "]" for b in binaries]
    structured = result.structured_content
    content = "\n".join(texts)
    if not content and structured is not None:
        content = json.dumps(structured, default=str)
    if len(content) > MAX_CHARS:
        content = content[:MAX_CHARS] + f"\n[... {len(content) - MAX_CHARS} characters cut]"
    out: dict[str, Any] = {"content": content, "is_error": bool(result.is_error)}
    if structured is not None:
        out["structured"] = structured
    if binaries:
        out["binary"] = binaries
    return out


def _binary(kind: str, mime: str, data: str, **extra: str) -> dict[str, Any]:
    try:
        raw = base64.b64decode(data, validate=False)
    except (ValueError, TypeError):
        raw = data.encode()
    return {"type": kind, "mimeType": mime, "bytes": len(raw),
            "blake2b": hashlib.blake2b(raw, digest_size=16).hexdigest(), **extra}
