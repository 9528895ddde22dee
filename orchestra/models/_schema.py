"""JSON-schema rewrites for constrained decoding: refs inlined, OpenAI's strict form.

Pydantic's schemas use ``$defs``/``$ref`` and optional fields with defaults. Grammar
builders (llama.cpp) and union schemas want self-contained subschemas; OpenAI's
strict structured outputs want every object closed and every property required.
Pure functions on plain dicts; the input is never modified.
"""

from __future__ import annotations

import copy
from typing import Any

_MAX_DEPTH = 32


class SchemaError(ValueError):
    """The schema cannot take the requested form (say, it is recursive)."""


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with every local ``#/$defs/X`` reference replaced by its definition."""
    defs = schema.get("$defs") or schema.get("definitions") or {}

    def walk(node: Any, depth: int) -> Any:
        if depth > _MAX_DEPTH:
            raise SchemaError("the schema is recursive (or nested deeper than "
                              f"{_MAX_DEPTH} levels); it cannot be inlined")
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith(("#/$defs/", "#/definitions/")):
                target = defs.get(ref.rsplit("/", 1)[1])
                if target is None:
                    raise SchemaError(f"unresolved reference {ref!r}")
                merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
                return walk(merged, depth + 1)
            return {k: walk(v, depth + 1) for k, v in node.items()
                    if k not in ("$defs", "definitions")}
        if isinstance(node, list):
            return [walk(item, depth + 1) for item in node]
        return node

    result: dict[str, Any] = walk(copy.deepcopy(schema), 0)
    return result


def strict_schema(schema: dict[str, Any]) -> dict[str, Any] | None:
    """OpenAI's strict form of ``schema``, or ``None`` when it has no strict form.

    Every object gets ``additionalProperties: false`` and all its properties
    required (a field with a default must then be written out; validation still
    applies the model's own rules), ``default`` values are dropped (strict mode
    refuses them). A free-form object (``dict[str, X]``) cannot be strict.
    """
    try:
        inlined = inline_refs(schema)
    except SchemaError:
        return None

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(item) for item in node]
        if not isinstance(node, dict):
            return node
        out = {k: walk(v) for k, v in node.items() if k not in ("default", "title")}
        if node.get("type") == "object" or "properties" in node:
            extra = node.get("additionalProperties")
            if extra not in (None, False):
                raise SchemaError("free-form object")
            props = out.get("properties") or {}
            out["properties"] = props
            out["required"] = list(props)
            out["additionalProperties"] = False
        return out

    try:
        result: dict[str, Any] = walk(inlined)
    except SchemaError:
        return None
    return result
