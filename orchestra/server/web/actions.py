"""The board's forms: log in and out, approve or deny, cancel, resume.

Each one checks its CSRF token (bound to this browser's nonce cookie) and, when
the browser sends one, that ``Origin`` is this server; then it does what the
API's endpoint does (the same functions) and redirects back (303)."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import parse_qs

from fastapi import APIRouter, Depends
from starlette.requests import Request
from starlette.responses import Response

from orchestra._errors import OrchestraError
from orchestra.server import routes_runs
from orchestra.server.app import Services, services
from orchestra.server.schemas import Decision, ResumeRequest
from orchestra.server.web.auth import NONCE, SESSION, cookie_header
from orchestra.server.web.render import back, page, web

router = APIRouter(include_in_schema=False)
Svc = Annotated[Services, Depends(services)]


async def _form(request: Request) -> dict[str, str]:
    body = (await request.body()).decode("utf-8", "replace")
    return {k: v[0] for k, v in parse_qs(body, keep_blank_values=True).items()}


def _forged(request: Request, form: dict[str, str]) -> Response | None:
    """A refusal if the form did not come from a page of this server."""
    origin = request.headers.get("origin")
    host = request.headers.get("host", "")
    if origin not in (None, "null") and origin.split("://", 1)[-1] != host:
        return _refuse(request, f"refused a form posted from {origin}: the board only "
                                "accepts its own forms")
    if not web(request).secrets.valid_csrf(request.cookies.get(NONCE), form.get("csrf")):
        return _refuse(request, "this form has expired or did not come from this board "
                                "(missing or wrong CSRF token): reload the page and retry")
    return None


def _refuse(request: Request, text: str, status: int = 403) -> Response:
    return page(request, "base.html", status, flashes=[{"kind": "error", "text": text}])


def _safe_next(target: str) -> str:
    return target if target.startswith("/") and not target.startswith("//") else "/"


@router.get("/login")
async def login_page(request: Request, svc: Svc, next: str = "/") -> Response:
    if svc.settings.token is None:
        return back(_safe_next(next))
    return page(request, "login.html", next=_safe_next(next), error=None)


@router.post("/login")
async def login(request: Request, svc: Svc) -> Response:
    form = await _form(request)
    target = _safe_next(form.get("next", "/"))
    refused = _forged(request, form)
    if refused is not None:
        return refused
    w = web(request)
    if not w.secrets.valid_token(form.get("token", "")):
        return page(request, "login.html", 401, next=target,
                    error="That is not this server's token.")
    response = back(target)
    response.headers.append("set-cookie", cookie_header(SESSION, w.secrets.new_session()))
    return response


@router.post("/logout")
async def logout(request: Request) -> Response:
    form = await _form(request)
    refused = _forged(request, form)
    if refused is not None:
        return refused
    response = back("/login")
    response.headers.append("set-cookie", cookie_header(SESSION, "", max_age=0))
    return response


@router.post("/runs/{run_id}/approvals/{approval_id}")
async def decide(request: Request, run_id: str, approval_id: str, svc: Svc) -> Response:
    form = await _form(request)
    refused = _forged(request, form)
    if refused is not None:
        return refused
    decision = form.get("decision")
    if decision not in ("approve", "deny"):
        return _refuse(request, f"decision must be approve or deny, got {decision!r}", 422)
    approval = await svc.store.get_approval(approval_id)
    if approval.run_id != run_id:
        return _refuse(request, f"approval {approval_id} is not in run {run_id}", 404)
    reason = form.get("reason", "").strip()[:4000] or None
    try:
        await routes_runs.decide(approval_id, Decision(approve=decision == "approve",
                                                       reason=reason, by="board"), svc)
    except OrchestraError as exc:
        return _refuse(request, str(exc), 409)
    return back(f"/runs/{run_id}")


@router.post("/runs/{run_id}/cancel")
async def cancel(request: Request, run_id: str, svc: Svc) -> Response:
    form = await _form(request)
    refused = _forged(request, form)
    if refused is not None:
        return refused
    try:
        await routes_runs.cancel(run_id, svc)
    except OrchestraError as exc:
        return _refuse(request, str(exc), 409)
    return back(f"/runs/{run_id}")


@router.post("/runs/{run_id}/resume")
async def resume(request: Request, run_id: str, svc: Svc) -> Response:
    form = await _form(request)
    refused = _forged(request, form)
    if refused is not None:
        return refused
    cap = form.get("max_tokens", "").strip()
    if cap and not (cap.isdigit() and int(cap) >= 1):
        return _refuse(request, f"the new token cap must be a whole number >= 1, got {cap!r}",
                       422)
    try:
        await routes_runs.resume(run_id, svc,
                                 ResumeRequest(max_tokens=int(cap)) if cap else None)
    except OrchestraError as exc:
        return _refuse(request, str(exc), 409)
    return back(f"/runs/{run_id}")

