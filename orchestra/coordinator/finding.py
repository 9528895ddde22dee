"""Which runs an ``orchestra worker`` should drive now, found with few queries.

A worker used to drive every active run: a drive loop, heartbeats and a cancel watch
per run in every worker, so N workers and R runs cost the store R x N looks and adding
workers lowered throughput. Now a worker drives a run only while it has work in it
(its drive leaves the run once it runs and can claim none of its tasks, see
``CoordinatorSettings.leave_idle``), and finds new work with one query per look
(``Blackboard.claimable_runs``: pending tasks that are due, or leases that expired, so a
killed worker's tasks are taken over). A slower sweep of the active runs (every third
of the lease, at most 2 s), keeps the claim on parked runs (:class:`ParkedRuns`) and drives the
live runs nobody serves, such as one whose worker died after its last task and before
finishing it.
"""

from __future__ import annotations

import time
from collections.abc import Collection

from orchestra.coordinator.serving import ParkedRuns, active_runs
from orchestra.store.protocol import Blackboard


class WorkFinder:
    """Finds the runs a worker has work in, and whether any run is still live."""

    def __init__(self, store: Blackboard, parked: ParkedRuns, *, lease_seconds: float,
                 batch: int = 64) -> None:
        self._store, self._parked = store, parked
        self._sweep, self._batch = min(lease_seconds / 3, 2.0), batch
        self._swept = -self._sweep
        self.live = True
        """Whether the last sweep saw a run that is pending or running (or a look found
        claimable work): a worker is idle only once none is left, not while another
        worker holds the last tasks (their leases may yet expire and need taking over)."""

    async def runs(self, serving: Collection[str], *, limit: int | None = None) -> list[str]:
        """The runs, outside ``serving``, this worker should start driving now: at most
        ``batch`` (or ``limit``) per look, so workers looking together share new runs."""
        want = self._batch if limit is None else min(limit, self._batch)
        found = await self._store.claimable_runs(limit=want, exclude=tuple(serving)) \
            if want > 0 else []
        now = time.monotonic()
        if now - self._swept >= self._sweep:
            self._swept = now
            found += await self._unserved(serving, set(found))
        elif found:
            self.live = True
        return found

    async def _unserved(self, serving: Collection[str], found: set[str]) -> list[str]:
        runs = await active_runs(self._store)
        await self._parked.hold(r for r in runs if r.id not in serving)
        live = [r.id for r in runs if r.status in ("pending", "running")]
        self.live = bool(live or found)
        others = [r for r in live if r not in serving and r not in found]
        if not others:
            return []
        until = await self._store.served_until(others)
        wall = time.time()
        return [r for r in others if (until.get(r) or 0.0) < wall]
