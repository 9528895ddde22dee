"""Runs that need a worker and have no live one, and why: what ``orchestra runs`` and
``show``, the HTTP API and the board page all say of a live run nobody serves.

One derivation for every reader: :func:`orphans` reads what the store knows (until when
each run is served, which versions live processes serve, each run's last event) and
:func:`needs_version` decides, purely, whether a run is stranded by its version (live
processes serve other versions, none its own) rather than merely unserved.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Collection
from typing import Any

from orchestra._types import Run
from orchestra.coordinator.resumable import INTERRUPTED_EVENT
from orchestra.store import Blackboard, EventLog

_SERVED = ("pending", "running")  # statuses a worker must drive (waiting waits for a human)


@dataclasses.dataclass(frozen=True)
class Orphan:
    """A run that needs a worker and has none: since when (None: none ever served it),
    whether its last one was stopped with Ctrl-C (the run's last event says so), and the
    version it ``needs`` when live processes serve others, none its own."""

    since: float | None
    interrupted: bool = False
    needs: str | None = None


def needs_version(run: Run, live_versions: Collection[str]) -> str | None:
    """The version an unserved ``run`` waits for, if live processes serve versions but
    not its own (a run with none recorded, or no live process at all: None)."""
    if run.version and live_versions and run.version not in live_versions:
        return run.version
    return None


async def orphans(store: Blackboard, runs: list[Run]) -> dict[str, Orphan]:
    """Runs that need a worker and have no live one, by run id."""
    live = [r for r in runs if r.status in _SERVED]
    if not live:
        return {}
    until, now = await store.served_until([r.id for r in live]), time.time()
    left = [r for r in live if (until.get(r.id) or 0) < now]
    served = await store.live_versions() if any(r.version for r in left) else set()
    return {r.id: Orphan(until.get(r.id), await _interrupted(store, r),
                         needs_version(r, served))
            for r in left}


def worker_fields(orphan: Orphan | None) -> dict[str, Any]:
    """A run's worker state as the JSON of ``orchestra runs --json`` and the API carry it."""
    return {"orphaned": orphan is not None,
            "no_worker_since": orphan.since if orphan else None,
            "interrupted": bool(orphan and orphan.interrupted),
            "needs_version": orphan.needs if orphan else None}


async def _interrupted(store: EventLog, run: Run) -> bool:
    last = await store.events(run.id, starting_after=run.last_seq - 1, limit=1) \
        if run.last_seq else []
    return bool(last) and last[-1].kind == INTERRUPTED_EVENT
