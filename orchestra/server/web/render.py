"""Templates (Jinja2, autoescaped, shipped in the package) and the page responses
that carry this browser's CSRF nonce."""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from orchestra.server.services import Services
from orchestra.server.web import views
from orchestra.server.web.auth import NONCE, SESSION, Secrets, cookie_header


@dataclass(slots=True)
class Web:
    """The board's state in one server: its keys, templates and loaded pipelines."""

    secrets: Secrets
    env: Environment
    pipelines: views.Pipelines


def make_web(token: str | None) -> Web:
    env = Environment(loader=PackageLoader("orchestra.server.web", "templates"),
                      autoescape=select_autoescape(default=True), trim_blocks=True,
                      lstrip_blocks=True)
    env.globals.update(age=views.age, pretty=views.pretty, short=views.short,
                       page_size=views.PAGE)
    return Web(Secrets(token), env, views.Pipelines())


def web(request: Request) -> Web:
    found: Web = request.app.state.web
    return found


def nonce(request: Request) -> tuple[str, bool]:
    """This browser's nonce, and whether it is new (then the response sets it)."""
    given = request.cookies.get(NONCE)
    if given and 16 <= len(given) <= 64:
        return given, False
    return secrets.token_urlsafe(18), True


def page(request: Request, template: str, code: int = 200, **context: Any) -> HTMLResponse:
    """A whole page, with a CSRF token for its forms."""
    w = web(request)
    value, new = nonce(request)
    context.setdefault("flashes", [])
    context.setdefault("now", time.time())
    svc: Services = request.app.state.services
    logged_in = svc.settings.token is not None and \
        w.secrets.valid_session(request.cookies.get(SESSION))
    html = w.env.get_template(template).render(csrf=w.secrets.csrf_token(value),
                                              logged_in=logged_in, **context)
    response = HTMLResponse(html, status_code=code,
                            headers={"Cache-Control": "no-store",
                                     "Content-Security-Policy": CSP,
                                     "X-Frame-Options": "DENY",
                                     "Referrer-Policy": "same-origin"})
    if new:
        response.headers.append("set-cookie", cookie_header(NONCE, value))
    return response


def fragment(request: Request, template: str, **context: Any) -> str:
    """One part of a page (the live refresh swaps it in)."""
    w = web(request)
    value, _ = nonce(request)
    context.setdefault("now", time.time())
    return w.env.get_template(template).render(csrf=w.secrets.csrf_token(value), **context)


def back(to: str) -> Response:
    return RedirectResponse(to, status_code=303)


CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
"""Only this server's own files: no inline script, nothing from the network."""
