"""What the endpoints share: the server's settings and its services (the store and the
background pieces), with the dependency that hands them to an endpoint. A module of its
own so the routes and the board's pages need not import the app that includes them."""

from __future__ import annotations

from dataclasses import dataclass, field

from fastapi import Request

from orchestra.coordinator.settings import CoordinatorSettings
from orchestra.models.prices import PriceBook
from orchestra.server.feeds import Feeds
from orchestra.server.pool import RunPool
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
