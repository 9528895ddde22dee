"""The board's pages: the runs, one run, one agent (all reads)."""

from __future__ import annotations

import json
from typing import Annotated, Any, get_args
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, Query
from fastapi.responses import JSONResponse
from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import Response

from orchestra._errors import NotFoundError
from orchestra._types import TERMINAL_RUN_STATUSES, Event, RunStatus
from orchestra.coordinator.orphans import orphans
from orchestra.server.schemas import decode_cursor, encode_cursor
from orchestra.server.services import Services, services
from orchestra.server.web import views
from orchestra.server.web.render import fragment, page, web

router = APIRouter(include_in_schema=False)
Svc = Annotated[Services, Depends(services)]
STATUSES: tuple[str, ...] = get_args(RunStatus)
BACKLOG = 200
"""Events a run page streams from the store before the live ones (older: on demand)."""


@router.get("/")
async def runs_page(request: Request, svc: Svc, status: str = "", cursor: str = "",
                    partial: bool = False) -> Response:
    """Active and recent runs, newest first; ``partial``: just the rows (live refresh)."""
    chosen: Any = status if status in STATUSES else None
    before = decode_cursor(cursor) if cursor else None
    runs = await svc.store.list_runs(status=chosen, limit=50, before=before)
    context = {"runs": runs, "status": chosen, "orphaned": await orphans(svc.store, runs)}
    if partial:
        return JSONResponse({"rows": fragment(request, "_rows.html", **context)})
    active = len(await svc.store.list_runs(active_only=True, limit=1000))
    nxt = None
    if len(runs) == 50:
        older = encode_cursor(runs[-1].created_at, runs[-1].id)
        nxt = f"/?{urlencode({'status': chosen or '', 'cursor': older})}"
    query = urlencode({"status": chosen or "", "cursor": cursor, "partial": 1})
    return page(request, "runs.html", statuses=STATUSES, active=active, next_url=nxt,
                live_url=f"/?{query}", **context)


async def _run_parts(request: Request, svc: Svc, run_id: str) -> dict[str, Any]:
    store = svc.store
    run = await store.get_run(run_id)
    tasks = await store.list_tasks(run_id)
    return {
        "run": run,
        "orphan": (await orphans(store, [run])).get(run_id),  # e.g. needs another version
        "task_counts": await store.task_counts(run_id),
        "task_total": len(tasks),
        "items": views.timeline(run, tasks),
        "lanes": await views.lanes(store, web(request).pipelines, run, tasks),
        "approvals": await store.list_approvals(run_id, status="pending"),
        "plans": await store.get_plans(run_id),
        "handoffs": (await store.get_handoffs(run_id))[-100:],
        "entries": (await store.get_entries(run_id))[-100:],  # each with its scope
    }


@router.get("/runs/{run_id}")
async def run_page(request: Request, run_id: str, svc: Svc, q: str = "") -> Response:
    """One run: its agents, task flow, approvals, board and live events."""
    try:
        parts = await _run_parts(request, svc, run_id)
    except NotFoundError as exc:
        return _missing(request, str(exc))
    run = parts["run"]
    notes = await svc.store.search_notes(run_id, text=q.strip() or None, limit=50)
    start = max(0, run.last_seq - BACKLOG)
    events = await svc.store.events(run_id, starting_after=start, limit=BACKLOG)
    return page(request, "run.html", q=q, notes=notes, stream_from=start,
                backlog=_script_json([_event(e) for e in events]),
                terminal=run.status in TERMINAL_RUN_STATUSES, **parts)


@router.get("/runs/{run_id}/live")
async def run_live(request: Request, run_id: str, svc: Svc) -> JSONResponse:
    """The run page's parts as HTML, re-read after new events."""
    parts = await _run_parts(request, svc, run_id)
    names = {"header": "_header.html", "lanes": "_lanes.html", "timeline": "_timeline.html",
             "approvals": "_approvals.html", "board": "_board.html"}
    return JSONResponse({k: fragment(request, v, **parts) for k, v in names.items()}
                        | {"status": parts["run"].status})


@router.get("/runs/{run_id}/events.json")
async def run_events(run_id: str, svc: Svc, after: Annotated[int, Query(ge=0)] = 0,
                     limit: Annotated[int, Query(ge=1, le=500)] = BACKLOG) -> JSONResponse:
    """A page of stored events (the run page's "earlier events")."""
    await svc.store.get_run(run_id)
    found = await svc.store.events(run_id, starting_after=after, limit=limit)
    return JSONResponse([_event(e) for e in found])


def _event(e: Event) -> dict[str, Any]:
    return {"seq_id": e.seq, "kind": e.kind, "at": e.at, "data": e.data}


def _script_json(value: Any) -> Markup:
    """JSON to embed in a ``<script type="application/json">``: nothing in it can end
    the element or open markup."""
    text = json.dumps(value, separators=(",", ":"), default=str)
    return Markup(text.replace("<", "\\u003c").replace(">", "\\u003e")
                  .replace("&", "\\u0026"))


@router.get("/runs/{run_id}/agents/{role}")
async def agent_page(request: Request, run_id: str, role: str, svc: Svc,
                     before: Annotated[int | None, Query(ge=1)] = None) -> Response:
    """One agent: a page of its stored history beside its model's view."""
    try:
        run = await svc.store.get_run(run_id)
    except NotFoundError as exc:
        return _missing(request, str(exc))
    view = await views.agent_view(svc.store, web(request).pipelines, run, role, before)
    if view.total == 0 and role not in {a.role for a in await svc.store.agent_infos(run_id)}:
        return _missing(request, f"run {run_id} has no agent {role!r} yet")
    return page(request, "agent.html", run=run, view=view)


def _missing(request: Request, text: str) -> Response:
    return page(request, "base.html", 404, flashes=[{"kind": "error", "text": text}])
