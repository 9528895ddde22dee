"""Board reads: a run's plans, handoffs, notes, entries, and one agent's messages."""

from __future__ import annotations

import dataclasses
from typing import Annotated

from fastapi import APIRouter, Depends, Query
from fastapi.responses import JSONResponse

from orchestra._errors import NotFoundError
from orchestra.runtime.agent_state import agent_id_for
from orchestra.server.routes_runs import _ERRORS
from orchestra.server.schemas import (
    EntryPage,
    HandoffPage,
    MessagePage,
    NotePage,
    PlanPage,
    envelope,
)
from orchestra.server.services import Services, services

router = APIRouter(prefix="/v1/runs/{run_id}")
Svc = Annotated[Services, Depends(services)]


def _list(kind: str, items: list[object]) -> JSONResponse:
    return JSONResponse(envelope(kind, [dataclasses.asdict(i)  # type: ignore[call-overload]
                                        for i in items]))


@router.get("/plans", response_model=PlanPage, responses=_ERRORS)
async def plans(run_id: str, svc: Svc) -> JSONResponse:
    """Every version of the run's plan, oldest first (the last one is current)."""
    await svc.store.get_run(run_id)
    return _list("plans", list(await svc.store.get_plans(run_id)))


@router.get("/handoffs", response_model=HandoffPage, responses=_ERRORS)
async def handoffs(run_id: str, svc: Svc, to_role: str | None = None) -> JSONResponse:
    """Postings from agent to role, each with the task it created."""
    await svc.store.get_run(run_id)
    return _list("handoffs", list(await svc.store.get_handoffs(run_id, to_role=to_role)))


@router.get("/notes", response_model=NotePage, responses=_ERRORS)
async def notes(run_id: str, svc: Svc, search: str | None = None, tag: str | None = None,
                limit: Annotated[int, Query(ge=1, le=500)] = 50) -> JSONResponse:
    """Shared notes: full-text ``search`` (best match first) and/or one ``tag``."""
    await svc.store.get_run(run_id)
    found = await svc.store.search_notes(run_id, text=search or None, tag=tag, limit=limit)
    return _list("notes", list(found))


@router.get("/entries", response_model=EntryPage, responses=_ERRORS)
async def entries(run_id: str, svc: Svc, type: str | None = None,
                  after: Annotated[int, Query(ge=0)] = 0) -> JSONResponse:
    """Typed entries in posting order (``type``: of one type; ``after``: past a position),
    each with its author and scope. The API is the operator's view: every scope."""
    return _list("entries", list(await svc.store.get_entries(run_id, type=type, after=after)))


@router.get("/agents/{role}/messages", response_model=MessagePage, responses=_ERRORS)
async def messages(run_id: str, role: str, svc: Svc,
                   after: Annotated[int, Query(ge=0)] = 0,
                   limit: Annotated[int, Query(ge=1, le=1000)] = 200) -> JSONResponse:
    """One agent's append-only history after message ``after`` (its per-agent seq)."""
    infos = await svc.store.agent_infos(run_id)
    if not infos:
        await svc.store.get_run(run_id)
    if role not in {a.role for a in infos}:
        raise NotFoundError(f"run {run_id} has no agent for role {role!r}; its agents: "
                            f"{sorted(a.role for a in infos)}")
    found = await svc.store.get_messages(agent_id_for(run_id, role), after_seq=after,
                                         limit=limit)
    return _list("messages", list(found))
