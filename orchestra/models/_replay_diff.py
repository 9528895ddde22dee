"""Where a replayed request first differs from the nearest recorded one (for the
error a strict replay raises)."""

from __future__ import annotations

import json
from typing import Any

_MISSING = object()
"""Marks a field one side lacks."""


def _around_first_change(was: Any, now: Any) -> tuple[str, Any, Any]:
    """For two long strings, the stretch around their first differing character.

    A tool's output often differs deep inside (a line width, a timing): showing both
    from the start would show two equal prefixes and hide the change.
    """
    if not (isinstance(was, str) and isinstance(now, str)) or len(was) + len(now) <= 200:
        return "", was, now
    offset = next((i for i, (a, b) in enumerate(zip(was, now, strict=False)) if a != b),
                  min(len(was), len(now)))
    start = max(0, offset - 30)
    return f" (character {offset})", was[start:start + 100], now[start:start + 100]


def _show(value: Any) -> str:
    if value is _MISSING:
        return "<absent>"
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= 120 else text[:117] + "..."


def _first_difference(a: Any, b: Any, path: str) -> tuple[str, Any, Any] | None:
    """The first (path, a-value, b-value) where ``a`` and ``b`` differ, in key order."""
    if isinstance(a, dict) and isinstance(b, dict):
        for name in sorted(set(a) | set(b)):
            sub = f"{path}.{name}" if path else name
            if name not in a or name not in b:
                return sub, a.get(name, _MISSING), b.get(name, _MISSING)
            found = _first_difference(a[name], b[name], sub)
            if found is not None:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list):
        for i in range(max(len(a), len(b))):
            sub = f"{path}[{i}]"
            if i >= len(a) or i >= len(b):
                return (sub, a[i] if i < len(a) else _MISSING,
                        b[i] if i < len(b) else _MISSING)
            found = _first_difference(a[i], b[i], sub)
            if found is not None:
                return found
        return None
    return None if a == b else (path, a, b)


def _shared_messages(a: Any, b: Any) -> int:
    """How many leading messages two requests have in common."""
    first, second = a.get("messages"), b.get("messages")
    if not isinstance(first, list) or not isinstance(second, list):
        return 0
    shared = 0
    for x, y in zip(first, second, strict=False):
        if x != y:
            break
        shared += 1
    return shared


def _count_differences(a: Any, b: Any) -> int:
    """How many leaves differ between ``a`` and ``b`` (a rough edit distance)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return sum(_count_differences(a.get(k, _MISSING), b.get(k, _MISSING))
                   for k in set(a) | set(b))
    if isinstance(a, list) and isinstance(b, list):
        return (sum(_count_differences(x, y) for x, y in zip(a, b, strict=False))
                + abs(len(a) - len(b)))
    return 0 if a == b else 1
