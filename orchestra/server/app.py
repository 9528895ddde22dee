"""The ASGI application of ``orchestra serve``: routes, error documents, security,
and the background pieces (the worker pool, the event feeds) it starts and stops."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from fastapi import FastAPI, Request
from starlette.middleware.cors import CORSMiddleware
from starlette.types import ASGIApp

from orchestra.coordinator.coordinator import CoordinatorSettings
from orchestra.models.prices import PriceBook
from orchestra.server import problems
from orchestra.server.feeds import Feeds
from orchestra.server.pool import RunPool
from orchestra.server.security import BodyLimit
from orchestra.store.protocol import Blackboard


@dataclass(frozen=True, slots=True)
class ServerSettings:
    """How the server behaves; ``orchestra serve`` fills it from its flags."""

    token: str | None = None
    """Bearer token required on every endpoint (``None``: no auth, loopback only)."""
    cors_origins: tuple[str, ...] = ()
    """Origins allowed to call the API from a browser (none: no CORS headers at all)."""
    workers: int = 4
    """Runs this server drives at once (0: an API only; `orchestra worker`s drive)."""
    coordinator: CoordinatorSettings = field(
        default_factory=lambda: CoordinatorSettings(concurrency=8, shared=True))
    """How each run is driven (shared: other servers and workers may serve the store)."""
    models: tuple[str, ...] = ()
    """Model specs used by every run this server drives (like ``--model``)."""
    prices: PriceBook | None = None
    """Prices for the runs it drives (``--price``); None: pipelines' own, then genai-prices."""
    ping_interval: float = 15.0
    """Seconds of silence on a stream before a keepalive."""
    liveness_interval: float = 5.0
    """How often a quiet stream checks that someone serves its run."""
    scan_interval: float = 0.5
    """How often the pool looks for runs to drive (its own requests wake it at once)."""
    max_body_bytes: int = 1 << 20
    """Largest request body accepted (413 over it)."""


@dataclass(slots=True)
class Services:
    """What the endpoints use: the store and the server's background pieces."""

    store: Blackboard
    settings: ServerSettings
    feeds: Feeds
    pool: RunPool


async def services(request: Request) -> Services:
    """The endpoints' dependency (async: FastAPI would run a sync one on a thread)."""
    svc: Services = request.app.state.services
    return svc


def create_app(store: Blackboard, settings: ServerSettings = ServerSettings()) -> ASGIApp:
    """The API over ``store`` (opened and closed by the caller)."""
    from orchestra.server import routes_board, routes_runs, web

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
