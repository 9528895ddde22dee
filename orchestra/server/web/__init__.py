"""The live board: server-rendered pages over the store, a little plain JavaScript
for the live parts (SSE from the API), no build step and nothing from the network."""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp

from orchestra.server.web.auth import WebAuth


def install(api: FastAPI, token: str | None) -> None:
    """Add the board's pages, forms and static files to ``api``."""
    from orchestra.server.web import actions, pages
    from orchestra.server.web.render import make_web

    api.state.web = make_web(token)
    api.include_router(pages.router)
    api.include_router(actions.router)
    api.mount("/static", StaticFiles(directory=Path(__file__).parent / "static"),
              name="static")


def protect(app: ASGIApp, api: FastAPI) -> ASGIApp:
    """The token check of a server that has one: sessions for the board, bearer for
    the API."""
    return WebAuth(app, api.state.web.secrets)


__all__ = ["install", "protect"]
