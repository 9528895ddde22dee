"""The ASGI application of ``orchestra serve``: routes, error documents, security,
and the background pieces (the worker pool, the event feeds) it starts and stops."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from fastapi import FastAPI
from starlette.middleware.cors import CORSMiddleware
from starlette.types import ASGIApp

from orchestra.server import problems, routes_board, routes_runs, web
from orchestra.server.feeds import Feeds
from orchestra.server.pool import RunPool
from orchestra.server.security import BodyLimit
from orchestra.server.services import ServerSettings as ServerSettings
from orchestra.server.services import Services
from orchestra.store.protocol import Blackboard


def create_app(store: Blackboard, settings: ServerSettings = ServerSettings()) -> ASGIApp:
    """The API over ``store`` (opened and closed by the caller)."""
    svc = Services(store, settings, Feeds(store),
                   RunPool(store, workers=settings.workers, settings=settings.coordinator,
                           models=settings.models, scan_interval=settings.scan_interval,
                           prices=settings.prices))

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        scanner = asyncio.create_task(svc.pool.run(), name="run pool")
        try:
            yield
        finally:
            scanner.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await scanner
            await svc.pool.close()
            await svc.feeds.close()

    api = FastAPI(title="orchestra", version="1", lifespan=lifespan,
                  summary="Durable multi-agent runs: start, follow, steer.",
                  docs_url=None, redoc_url=None)
    api.state.services = svc
    problems.install(api)
    api.include_router(routes_runs.router)
    api.include_router(routes_board.router)
    web.install(api, settings.token)  # the board's pages at /
    app: ASGIApp = BodyLimit(api, settings.max_body_bytes)
    if settings.token is not None:  # bearer for the API, a login session for the board
        app = web.protect(app, api)
    if settings.cors_origins:  # outermost: preflights carry no token
        app = CORSMiddleware(app, allow_origins=list(settings.cors_origins),
                             allow_methods=["GET", "POST"],
                             allow_headers=["authorization", "content-type", "last-event-id"])
    return app
