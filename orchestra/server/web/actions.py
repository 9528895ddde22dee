"""The board's forms: log in and out, approve or deny, cancel, resume.

Each one checks its CSRF token (bound to this browser's nonce cookie) and, when
the browser sends one, that ``Origin`` is this server; then it does what the
API's endpoint does (the same functions) and redirects back (303)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated
from urllib.parse import parse_qs

from fastapi import APIRouter, Depends
from starlette.requests import Request
from starlette.responses import Response

from orchestra._errors import NotFoundError, OrchestraError
from orchestra.server import routes_runs
from orchestra.server.schemas import Decision, ResumeRequest
from orchestra.server.services import Services, services
from orchestra.server.web.auth import NONCE, SESSION, cookie_header
from orchestra.server.web.render import back, page, web

router = APIRouter(include_in_schema=False)
Svc = Annotated[Services, Depends(services)]


async def _checked_form(request: Request) -> tuple[dict[str, str], Response | None]:
    """The posted form, and a refusal if it did not come from a page of this server."""
    body = (await request.body()).decode("utf-8", "replace")
    form = {k: v[0] for k, v in parse_qs(body, keep_blank_values=True).items()}
    origin = request.headers.get("origin")
    host = request.headers.get("host", "")
    if origin not in (None, "null") and origin.split("://", 1)[-1] != host:
        return form, _refuse(request, f"refused a form posted from {origin}: the board only "
                                      "accepts its own forms")
    if not web(request).secrets.valid_csrf(request.cookies.get(NONCE), form.get("csrf")):
        return form, _refuse(request, "this form has expired or did not come from this "
                                      "board (missing or wrong CSRF token): reload the page "
                                      "and retry")
    return form, None


async def _run_action(request: Request, run_id: str,
                      act: Callable[[dict[str, str]], Awaitable[Response | None]]) -> Response:
    """A checked form's action on a run (``act`` may refuse bad input with a page),
    then back to the run's page; what the run's state refuses is a 409 page."""
    form, refused = await _checked_form(request)
    if refused is not None:
        return refused
    try:
        refused = await act(form)
    except OrchestraError as exc:
        return _refuse(request, str(exc), 409)
    return refused or back(f"/runs/{run_id}")


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
    form, refused = await _checked_form(request)
    target = _safe_next(form.get("next", "/"))
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
    _, refused = await _checked_form(request)
    if refused is not None:
        return refused
    response = back("/login")
    response.headers.append("set-cookie", cookie_header(SESSION, "", max_age=0))
    return response


@router.post("/runs/{run_id}/approvals/{approval_id}")
async def decide(request: Request, run_id: str, approval_id: str, svc: Svc) -> Response:
    async def act(form: dict[str, str]) -> Response | None:
        decision = form.get("decision")
        if decision not in ("approve", "deny"):
            return _refuse(request, f"decision must be approve or deny, got {decision!r}", 422)
        try:
            approval = await svc.store.get_approval(approval_id)
        except NotFoundError as exc:  # a page, like the board's other 404s
            return _refuse(request, str(exc), 404)
        if approval.run_id != run_id:
            return _refuse(request, f"approval {approval_id} is not in run {run_id}", 404)
        reason = form.get("reason", "").strip()[:4000] or None
        await routes_runs.decide(approval_id, Decision(approve=decision == "approve",
                                                       reason=reason, by="board"), svc)
        return None

    return await _run_action(request, run_id, act)


@router.post("/runs/{run_id}/cancel")
async def cancel(request: Request, run_id: str, svc: Svc) -> Response:
    async def act(form: dict[str, str]) -> None:
        await routes_runs.cancel(run_id, svc)

    return await _run_action(request, run_id, act)


@router.post("/runs/{run_id}/resume")
async def resume(request: Request, run_id: str, svc: Svc) -> Response:
    async def act(form: dict[str, str]) -> Response | None:
        cap = form.get("max_tokens", "").strip()  # a paused run's new token cap
        if cap and not (cap.isdigit() and int(cap) >= 1):
            return _refuse(request, "the new token cap must be a whole number >= 1, got "
                                    f"{cap!r}", 422)
        cost = form.get("max_cost", "").strip()  # or its new cost cap, in USD
        try:
            usd = float(cost) if cost else None
        except ValueError:
            usd = -1.0
        if usd is not None and not usd > 0:
            return _refuse(request, f"the new cost cap must be a positive number of USD, got "
                                    f"{cost!r}", 422)
        await routes_runs.resume(run_id, svc, ResumeRequest(
            max_tokens=int(cap) if cap else None, max_cost=usd) if cap or usd else None)
        return None

    return await _run_action(request, run_id, act)
