"""``orchestra serve``: the HTTP API and a worker pool on one store, under uvicorn."""

from __future__ import annotations

import socket

from orchestra._errors import UserError
from orchestra.coordinator.settings import CoordinatorSettings
from orchestra.server.app import create_app
from orchestra.server.security import check_bind
from orchestra.server.services import ServerSettings
from orchestra.store.url import label, open_store


def listen(host: str, port: int) -> socket.socket:
    """Bind and listen now: a taken port fails before anything starts, and port 0 is
    resolved to the real one the ready line reports."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise UserError(f"cannot listen on {host}:{port}: {exc.strerror}") from exc
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


async def serve(db: str, host: str, port: int, settings: ServerSettings, *,
                access_log: bool = False) -> int:
    """Serve until SIGINT/SIGTERM; the store is opened (and refused, if bad) first."""
    import uvicorn

    check_bind(host, settings.token)
    if settings.workers < 0:
        raise UserError(f"--workers must be >= 0, got {settings.workers}")
    if settings.ping_interval <= 0:
        raise UserError(f"--ping-interval must be > 0 seconds, got {settings.ping_interval}")
    sock = listen(host, port)
    store = await open_store(db)
    try:
        app = create_app(store, settings)
        config = uvicorn.Config(app, log_level="warning", access_log=access_log,
                                timeout_graceful_shutdown=2, lifespan="on")
        server = uvicorn.Server(config)
        bound = sock.getsockname()
        where = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
        print(f"orchestra serve: listening on http://{where}:{bound[1]} (store {label(db)}, "
              f"{settings.workers} workers{', token required' if settings.token else ''})",
              flush=True)
        await server.serve(sockets=[sock])
    finally:
        sock.close()
        await store.close()
    return 0


def settings_from_args(token: str | None, cors: list[str], workers: int, concurrency: int,
                       max_tokens: int | None, models: list[str], ping_interval: float,
                       liveness_interval: float, max_body: int) -> ServerSettings:
    if concurrency < 1:
        raise UserError(f"--concurrency must be >= 1, got {concurrency}")
    if liveness_interval <= 0:
        raise UserError(f"--liveness-interval must be > 0 seconds, got {liveness_interval}")
    if max_body < 1:
        raise UserError(f"--max-body must be >= 1 byte, got {max_body}")
    return ServerSettings(token=token, cors_origins=tuple(cors), workers=workers,
                          coordinator=CoordinatorSettings(concurrency=concurrency,
                                                          max_tokens_per_run=max_tokens,
                                                          shared=True),
                          models=tuple(models), ping_interval=ping_interval,
                          liveness_interval=liveness_interval, max_body_bytes=max_body)

