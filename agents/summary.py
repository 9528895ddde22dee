"""What a finished run of the stock pipeline did, told from its board: the modules the
architect planned, which were approved (in which round), and each problem a reviewer
caught with the coder's fix. ``orchestra demo`` prints it after the run."""

from __future__ import annotations

from typing import Any

from orchestra.store import Board


def _module_path(payload: Any) -> str:
    module = payload.get("module") if isinstance(payload, dict) else None
    return str(module.get("path", "?")) if isinstance(module, dict) else "?"


def _short(text: str, limit: int = 220) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1].rsplit(" ", 1)[0] + "…"


async def run_story(store: Board, run_id: str) -> list[str]:
    """Lines for a person: built and approved modules, bugs caught and how they were fixed."""
    plan = await store.latest_plan(run_id)
    body = plan.body if plan is not None and isinstance(plan.body, dict) else {}
    modules = [str(m.get("path")) for m in body.get("modules", []) if isinstance(m, dict)]
    approved: dict[str, str] = {}
    for note in await store.search_notes(run_id, tag="approval", limit=500):
        path = next((t for t in note.tags if t != "approval"), "")
        approved[path] = note.body.rsplit(" in ", 1)[-1] if " in " in note.body else ""
    lines = []
    if modules:
        lines.append("modules built: " + ", ".join(modules))
        lines.append("approved by the reviewer: " + (", ".join(
            f"{m} ({approved[m]})" for m in modules if m in approved) or "none"))
        missing = [m for m in modules if m not in approved]
        if missing:
            lines.append("not approved: " + ", ".join(missing))
    handoffs = await store.get_handoffs(run_id)
    for h in handoffs:
        comments = h.payload.get("comments") if isinstance(h.payload, dict) else None
        if h.to_role != "coder" or not comments:
            continue
        path, rnd = _module_path(h.payload), h.payload.get("round")
        lines.append(f"the reviewer caught in {path} (round {int(rnd or 2) - 1}): "
                     f"{_short(str(comments[0]))}")
        fix = next((f for f in handoffs if f.to_role == "reviewer" and isinstance(f.payload, dict)
                    and _module_path(f.payload) == path and f.payload.get("round") == rnd), None)
        if fix is not None and fix.payload.get("summary"):
            lines.append(f"  fixed in round {rnd}: {_short(str(fix.payload['summary']))}")
    return lines
