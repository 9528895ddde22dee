"""Runs: start, list, poll, stream, cancel, resume; approvals."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Query
from fastapi.responses import JSONResponse, StreamingResponse

from orchestra._errors import UserError
from orchestra._types import Approval, Run, RunStatus
from orchestra.coordinator.coordinator import Coordinator
from orchestra.coordinator.orphans import Orphan, orphans, worker_fields
from orchestra.coordinator.owners import dead_local_owners
from orchestra.coordinator.pipeline import load_pipeline
from orchestra.coordinator.resumable import CANCELLABLE, check_resumable
from orchestra.coordinator.run_models import (
    model_settings,
    models_for_run,
    recorded_settings,
    run_cap,
    run_cost_cap,
)
from orchestra.coordinator.upgrade import upgrade_run
from orchestra.coordinator.usage_report import run_usage
from orchestra.coordinator.versions import check_version
from orchestra.server.problems import Problem
from orchestra.server.schemas import (
    ApprovalPage,
    Decision,
    ResumeRequest,
    RunAccepted,
    RunCreate,
    RunDetail,
    RunPage,
    UpgradeResult,
    decode_cursor,
    encode_cursor,
    envelope,
)
from orchestra.server.services import Services, services
from orchestra.server.sse import EventStream, StreamOptions

router = APIRouter(prefix="/v1")
Svc = Annotated[Services, Depends(services)]
_ERRORS: dict[int | str, dict[str, Any]] = {
    404: {"description": "No such run or approval"},
    409: {"description": "The request does not fit the run's state"},
    422: {"description": "A malformed request; `detail` names the field"},
}


def _json(data: Any, status: int = 200) -> JSONResponse:
    return JSONResponse(data, status_code=status)


def _invalid(field: str, exc: Exception) -> Problem:
    return Problem(422, f"{field}: {exc}", errors=[{"field": field, "message": str(exc)}])


def _model_specs(model: str | dict[str, str] | None) -> list[str]:
    if model is None:
        return []
    if isinstance(model, str):
        return [model]
    return [f"{role}={spec}" for role, spec in model.items()]


@router.post("/runs", status_code=202, response_model=RunAccepted, responses=_ERRORS)
async def create_run(body: RunCreate, svc: Svc) -> JSONResponse:
    """Start a run; it is driven in the background whether or not anyone watches."""
    run_input = dict(body.input)
    try:
        pipeline = load_pipeline(body.pipeline, run_input)
    except UserError as exc:
        raise _invalid("pipeline", exc) from exc
    try:  # the run's own settings, recorded apart from its input (the user's namespace)
        settings = model_settings(_model_specs(body.model), max_tokens=body.max_tokens,
                                  max_cost=body.max_cost)
        models = models_for_run(pipeline, settings, svc.settings.models)
    except UserError as exc:
        raise _invalid("model", exc) from exc
    try:
        coord = Coordinator(svc.store, pipeline, models=models,
                            settings=svc.settings.coordinator)
        run = await coord.start(run_input, settings=settings)
    except UserError as exc:
        raise _invalid("input", exc) from exc
    svc.pool.kick()
    return JSONResponse({"run_id": run.id, "status": run.status}, status_code=202,
                        headers={"Location": f"/v1/runs/{run.id}"})


@router.get("/runs", response_model=RunPage, responses=_ERRORS)
async def list_runs(svc: Svc, active: bool = False, status: RunStatus | None = None,
                    pipeline: str | None = None,
                    limit: Annotated[int, Query(ge=1, le=500)] = 50,
                    cursor: str | None = None) -> JSONResponse:
    """Runs, newest first; ``active=true`` finds the runs still going after a restart."""
    before = decode_cursor(cursor) if cursor else None
    runs = await svc.store.list_runs(active_only=active, status=status, pipeline=pipeline,
                                     limit=limit, before=before)
    nxt = encode_cursor(runs[-1].created_at, runs[-1].id) if len(runs) == limit else None
    orphaned = await orphans(svc.store, runs)
    return _json(envelope("runs", [_run_json(r, orphaned) for r in runs], nxt))


def _run_json(run: Run, orphaned: dict[str, Orphan]) -> dict[str, Any]:
    """A run as the API shows it: its fields, ``reason`` (why it is paused, or null) and
    its worker state as ``orchestra runs --json`` says it (``needs_version``: a live run
    that only a worker of that version may take, and no live process serves)."""
    return {**dataclasses.asdict(run), "reason": run.reason,
            **worker_fields(orphaned.get(run.id))}


@router.get("/runs/{run_id}", response_model=RunDetail, responses=_ERRORS)
async def get_run(run_id: str, svc: Svc) -> JSONResponse:
    """The polling endpoint: status, task and step totals, per-agent state, usage."""
    store = svc.store
    run = await store.get_run(run_id)
    # queued together on the store's reader: one wait instead of four round trips
    tasks, steps, agents, pending, usage, orphaned = await asyncio.gather(
        store.task_counts(run_id), store.step_counts(run_id), store.agent_infos(run_id),
        store.list_approvals(run_id, status="pending"), run_usage(store, run_id),
        orphans(store, [run]))
    return _json({
        "run": _run_json(run, orphaned),
        "status": run.status,
        "reason": run.reason,
        "usage": {"tokens_in": run.tokens_in, "tokens_out": run.tokens_out, "cost": run.cost,
                  "steps": run.steps, **usage.as_dict()},
        "tasks": tasks,
        "steps": steps,
        "agents": [dataclasses.asdict(a) for a in agents],
        "approvals_pending": [dataclasses.asdict(a) for a in pending],
        "served_here": svc.pool.serving(run_id),
    })


@router.get("/runs/{run_id}/stream", responses={
    **_ERRORS, 200: {"description": "Server-Sent Events: `id: <seq>`, `event: <kind>`, "
                     "`data: {run_id, seq_id, kind, at, data}`",
                     "content": {"text/event-stream": {}}}})
async def stream(run_id: str, svc: Svc,
                 starting_after: Annotated[int, Query(ge=0)] = 0,
                 include_pings: bool = False, tokens: bool = True,
                 last_event_id: Annotated[str | None, Header()] = None) -> StreamingResponse:
    """The run's events after a cursor: stored ones first, then live ones as they
    commit, until the run's terminal event. Reconnect with ``Last-Event-ID``.
    ``tokens=0``: without the models' text deltas (``model.delta``)."""
    cursor = starting_after
    if last_event_id is not None:  # a reconnect: the browser keeps the first URL's query
        if not last_event_id.strip().isdigit():
            raise _invalid("Last-Event-ID", ValueError(
                f"{last_event_id!r} is not an event seq (a non-negative integer)"))
        cursor = int(last_event_id)
    await svc.store.get_run(run_id)  # 404 before the stream starts
    options = StreamOptions(svc.settings.ping_interval, include_pings,
                            svc.settings.liveness_interval, tokens)
    events = EventStream(svc.store, svc.feeds, svc.pool.unserved, run_id, cursor, options)
    return StreamingResponse(events.frames(), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


@router.post("/runs/{run_id}/cancel", response_model=RunAccepted, responses=_ERRORS)
async def cancel(run_id: str, svc: Svc) -> JSONResponse:
    """Cancel a run: no new step starts; the state stays consistent."""
    run = await svc.pool.cancel(run_id)
    if run is None:
        await svc.store.get_run(run_id)
        run = await svc.store.set_run_status(run_id, "cancelled", only_from=CANCELLABLE)
    return _json({"run_id": run.id, "status": run.status})


@router.post("/runs/{run_id}/resume", status_code=202, response_model=RunAccepted,
             responses=_ERRORS)
async def resume(run_id: str, svc: Svc, body: ResumeRequest | None = None) -> JSONResponse:
    """Continue a failed, paused or interrupted run in the background (with a new
    token cap if given: it holds for every process that serves the run from now on).
    A run paused by its token cap needs a cap above what it used: else a 409 says so."""
    store = svc.store
    run = await store.get_run(run_id)
    new_cap = body.max_tokens if body is not None else None
    new_cost = body.max_cost if body is not None else None
    recorded = await recorded_settings(store, run)
    cap = svc.settings.coordinator.max_tokens_per_run or new_cap or \
        recorded.get("max_tokens")  # a server-wide cap wins
    check_resumable(run, cap, how='POST /v1/runs/{id}/resume {"max_tokens": N}',  # else 409
                    cost_cap=new_cost or recorded.get("max_cost"),
                    cost_how='POST /v1/runs/{id}/resume {"max_cost": USD}')
    check_version(run.id, run.version, load_pipeline(run.pipeline, run.input).fingerprint)
    if new_cap is not None:
        await run_cap(store, run, new_cap)
    if new_cost is not None:
        await run_cost_cap(store, run, new_cost)
    if not svc.pool.serving(run_id):
        running = await store.list_tasks(run_id, status="running")
        dead = dead_local_owners({t.lease_owner for t in running}, me="")
        if dead:
            await store.release_leases(run_id, owners=dead)
        if run.status == "failed":
            await store.retry_failed_tasks(run_id)
        if run.status in ("failed", "paused", "stalled"):  # their tasks are still pending
            stopped: tuple[RunStatus, ...] = (run.status,)
            run = await store.set_run_status(run_id, "running", only_from=stopped)
        svc.pool.kick()
    return _json({"run_id": run.id, "status": run.status}, 202)


@router.post("/runs/{run_id}/upgrade", response_model=UpgradeResult, responses=_ERRORS)
async def upgrade(run_id: str, svc: Svc, patched: bool = False) -> JSONResponse:
    """Move a run to the version of the pipeline as this server builds it, if no completed
    step of its journal would be asked otherwise (nothing is called); else ``moved`` is
    false and ``difference`` names the first step that differs. ``?patched=true``: compare
    with what the code asks before its roles' patches."""
    run = await svc.store.get_run(run_id)
    version = load_pipeline(run.pipeline, run.input).fingerprint
    check, after = await upgrade_run(svc.store, run_id, version, patched=patched)
    if check.moves:
        svc.pool.kick()
    return _json({"run_id": run_id, "moved": check.moves and check.old != check.new,
                  "from_version": check.old, "to_version": check.new,
                  "version": after.version, "checked": check.checked,
                  "difference": None if check.difference is None else str(check.difference)})


@router.get("/runs/{run_id}/approvals", response_model=ApprovalPage, responses=_ERRORS)
async def approvals(run_id: str, svc: Svc,
                    status: Annotated[str | None, Query(pattern="^(pending|approved|denied)$")]
                    = None) -> JSONResponse:
    """The run's tool calls that wait for (or got) a human decision."""
    await svc.store.get_run(run_id)
    found = await svc.store.list_approvals(run_id, status=status)
    return _json(envelope("approvals", [dataclasses.asdict(a) for a in found]))


@router.post("/approvals/{approval_id}", response_model=Approval, responses=_ERRORS)
async def decide(approval_id: str, body: Decision, svc: Svc) -> JSONResponse:
    """Approve or deny a pending tool call; the run continues in the background.
    A decision cannot be changed: deciding again is a 409."""
    approval = await svc.store.decide_approval(approval_id, approved=body.approve, by=body.by,
                                               reason=body.reason)
    svc.pool.kick()
    return _json(dataclasses.asdict(approval))
