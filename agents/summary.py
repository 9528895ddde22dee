"""What a finished run of the stock pipeline did, told from its board for a person (what
was built and approved, the failures its test runs caught): ``orchestra demo`` prints it."""

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
    kept = [str(k) for k in body.get("kept", [])]
    modules = [str(m.get("path")) for m in body.get("modules", [])
               if isinstance(m, dict) and m.get("path") not in kept]
    approved: dict[str, str] = {}
    for note in await store.search_notes(run_id, tag="approval", limit=500):
        path = next((t for t in note.tags if t != "approval"), "")
        approved[path] = note.body.rsplit(" in ", 1)[-1] if " in " in note.body else ""
    lines = ["kept as the workspace held them (their tests pass): " + ", ".join(kept)
             ] if kept else []
    if modules:
        lines.append("modules built: " + ", ".join(modules))
        lines.append("approved: " + (", ".join(
            f"{m} ({approved[m]})" for m in modules if m in approved) or "none"))
        gave_up = {next((t for t in n.tags if t != "failed"), "")
                   for n in await store.search_notes(run_id, tag="failed", limit=500)}
        rejected = [m for m in modules if m in gave_up and m not in approved]
        if rejected:
            lines.append("not approved after the last review round: " + ", ".join(rejected))
        unreviewed = {next((t for t in n.tags if t != "kept"), "")
                      for n in await store.search_notes(run_id, tag="kept", limit=500)}
        kept_as_is = [m for m in modules if m in unreviewed and m not in approved]
        if kept_as_is:  # only the tester's own tests fail, or no test ran
            lines.append("kept without a review, its tests unconfirmed: "
                         + ", ".join(kept_as_is))
        unfinished = [m for m in modules if m not in approved and m not in gave_up
                      and m not in unreviewed]
        if unfinished:  # a paused, stopped or still running run: nobody judged them yet
            lines.append("not reviewed to the end yet: " + ", ".join(unfinished))
    for h in await store.get_handoffs(run_id):
        payload = h.payload if isinstance(h.payload, dict) else {}
        if h.to_role == "reviewer" and payload.get("history"):
            path, rnd = _module_path(payload), payload.get("round")
            for earlier in payload["history"]:
                failed = str(earlier.get("failed") or "a failing test")
                lines.append(f"its own tests caught in {path} (round {rnd}): {_short(failed)}")
            if payload.get("report", {}).get("passed") and payload.get("summary"):
                lines.append(f"  fixed: {_short(str(payload['summary']))}")
        comments = payload.get("comments")
        if h.to_role in ("coder", "tester") and comments:
            path, rnd = _module_path(payload), payload.get("round")
            lines.append(f"the reviewer sent {path} back to the {h.to_role} (round "
                         f"{int(rnd or 2) - 1}): {_short(str(comments[0]))}")
    return lines
