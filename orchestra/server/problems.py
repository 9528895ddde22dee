"""Errors as ``application/problem+json`` (RFC 9457): a status, a title and a ``detail``
that names the problem and what to do."""

from __future__ import annotations

import json
from collections.abc import Mapping
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.responses import Response

from orchestra._errors import NotFoundError, PayloadTooLargeError, UserError

PROBLEM = "application/problem+json"


class Problem(Exception):
    """Raised by an endpoint to answer with a problem document."""

    def __init__(self, status: int, detail: str, **extra: Any) -> None:
        super().__init__(detail)
        self.status, self.detail, self.extra = status, detail, extra


def problem_body(status: int, detail: str, **extra: Any) -> bytes:
    doc = {"type": "about:blank", "title": HTTPStatus(status).phrase, "status": status,
           "detail": detail, **extra}
    return json.dumps(doc, default=str).encode()


def problem(status: int, detail: str, headers: Mapping[str, str] | None = None,
            **extra: Any) -> Response:
    return Response(problem_body(status, detail, **extra), status_code=status,
                    media_type=PROBLEM, headers=headers)


def _field(loc: tuple[Any, ...]) -> str:
    """``("body", "input", "x")`` → ``input.x``; ``("query", "limit")`` → ``limit``."""
    parts = [str(p) for p in loc[1:]] if len(loc) > 1 else [str(p) for p in loc]
    return ".".join(parts)


def _validation(_: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    errors = [{"field": _field(tuple(e.get("loc", ()))), "message": e.get("msg", "invalid")}
              for e in exc.errors()]
    detail = "; ".join(f"{e['field']}: {e['message']}" for e in errors) or "invalid request"
    return problem(422, detail, errors=errors)


def install(app: FastAPI) -> None:
    """Answer every error this API raises as a problem document."""

    def http_error(_: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        return problem(exc.status_code, str(exc.detail), headers=exc.headers)

    def own(_: Request, exc: Exception) -> Response:
        assert isinstance(exc, Problem)
        return problem(exc.status, exc.detail, **exc.extra)

    def not_found(_: Request, exc: Exception) -> Response:
        return problem(404, str(exc))

    def too_large(_: Request, exc: Exception) -> Response:
        return problem(413, str(exc))

    def conflict(_: Request, exc: Exception) -> Response:
        # the caller's request does not fit the current state (a decided approval,
        # a finished run); a request that is malformed is a 422 raised explicitly
        return problem(409, str(exc))

    app.add_exception_handler(RequestValidationError, _validation)
    app.add_exception_handler(HTTPException, http_error)
    app.add_exception_handler(Problem, own)
    app.add_exception_handler(NotFoundError, not_found)
    app.add_exception_handler(PayloadTooLargeError, too_large)
    app.add_exception_handler(UserError, conflict)
