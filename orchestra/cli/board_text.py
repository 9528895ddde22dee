"""How the board's plans, handoffs and notes read as text lines."""

from __future__ import annotations

import json
from typing import Any

from orchestra._scopes import PUBLIC
from orchestra._types import Note


def shorten(text: str, limit: int) -> str:
    """``text`` cut at a word boundary with an ellipsis when longer than ``limit``."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[:limit - 1].rsplit(" ", 1)[0] or text[:limit - 1]
    return cut.rstrip(",;:") + "…"


def _plan_text(body: Any) -> str:
    """A plan as a person reads it: its fields, list items one per line, long text shortened."""
    if not isinstance(body, dict):
        return "  " + shorten(json.dumps(body, default=str), 400)
    lines = []
    for key, value in body.items():
        if isinstance(value, list):
            lines.append(f"  {key}:")
            for item in value:
                text = (", ".join(f"{k}={v}" for k, v in item.items())
                        if isinstance(item, dict) else str(item))
                lines.append(f"    - {shorten(text, 200)}")
        else:
            lines.append(f"  {key}: {shorten(str(value), 300)}")
    return "\n".join(lines)


def _handoff_text(source: str, to_role: str, note: str, payload: Any, task_id: str | None) -> str:
    """What a person needs from a handoff: which module, the note, the reviewer's comments."""
    head = f"handoff {source} -> {to_role}"
    if isinstance(payload, dict):
        module = payload.get("module")
        if isinstance(module, dict):
            module = module.get("path") or module.get("name")
        if module:
            head += f" [{module}]"
        if payload.get("round"):
            head += f" round {payload['round']}"
            note = note.removeprefix(f"round {payload['round']}: ")  # said once, in the head
    lines = [f"{head}: {note or '(no note)'}" + (f" (task {task_id})" if task_id else "")]
    comments = payload.get("comments") if isinstance(payload, dict) else None
    for comment in comments or []:
        lines.append(f"    - {shorten(str(comment), 300)}")
    return "\n".join(lines)


def note_text(n: Note) -> str:
    """A note as ``orchestra board`` shows it, its scope named when it is not public (the
    operator's view holds every note)."""
    scope = "" if n.scope == PUBLIC else f" [{n.scope}]"
    return f"note [{', '.join(n.tags)}] {n.author_role}{scope}: {shorten(n.body, 300)}"
