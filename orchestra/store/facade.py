"""The store's facade, written once for both backends: the base of its halves.

Each half (``facade_runs``, ``facade_tasks``, ``facade_board``, ``facade_approvals``,
``facade_history``) holds the public methods whose logic is the same on every backend:
each builds its op from the backend's SQL (``_sql``, see ``backend.Backend``) and sends
it through the backend's driver. A backend's store class inherits the halves, sets
``_sql`` and provides the driver; what it does its own way (claims, a step's end, the
fast paths, ``follow``) stays in its own ``store*.py``.

A new concern follows the same shape: its functions in a module of the same name in
each backend, a protocol for them and a field in ``backend.Backend`` (each backend's
``backend.py`` fills it), and a ``facade_<concern>.py`` half both store classes inherit.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

from orchestra.store.backend import Backend, C, X

T = TypeVar("T")


class Facade(Generic[X, C]):
    """What every half needs from the store class: ``_sql`` and the driver."""

    _sql: Backend[X, C]

    async def _write(self, op: Callable[[X], Awaitable[T]]) -> T:
        """Run ``op`` as one write transaction (retried, group-committed: the backend's)."""
        raise NotImplementedError

    async def _read(self, op: Callable[[C], Awaitable[T]]) -> T:
        """Run ``op`` on a read connection."""
        raise NotImplementedError
