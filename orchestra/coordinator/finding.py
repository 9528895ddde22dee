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

Several workers share a backlog: a busy worker (:class:`~orchestra.coordinator.load.Load`:
its CPU saturated, or its event loop running late) takes one new run per look instead
of a batch, leaving the rest to workers with room (before, the first worker up took
every run of a backlog and a second one idled); a look picks its runs at random among
the oldest twice as many, so workers looking together rarely start on the same runs;
and the sweep leaves runs with claimable work to the looks.
"""

from __future__ import annotations

import random
import time
from collections.abc import Collection

from orchestra._types import Run
from orchestra.coordinator.load import Load
from orchestra.coordinator.served_versions import ServedVersions
from orchestra.coordinator.serving import ParkedRuns, active_runs
from orchestra.store.protocol import Blackboard


class WorkFinder:
    """Finds the runs a worker has work in, and whether any run is still live."""

    def __init__(self, store: Blackboard, parked: ParkedRuns, *, lease_seconds: float,
                 batch: int = 64, load: Load | None = None,
                 rng: random.Random | None = None,
                 versions: ServedVersions | None = None) -> None:
        self._store, self._parked = store, parked
        self.versions = versions or ServedVersions()
        """The versions this process serves: its looks and sweeps see only their runs."""
        self._sweep, self._batch = min(lease_seconds / 3, 2.0), batch
        self._swept = -self._sweep
        self.load = load or Load()
        self._rng = rng or random.Random()
        self.full = False
        """Whether the last look took a whole batch while this process had room: a
        backlog is waiting, and its caller may look again sooner."""
        self.live = True
        """Whether the last sweep saw a run that is pending or running (or a look found
        claimable work): a worker is idle only once none is left, not while another
        worker holds the last tasks (their leases may yet expire and need taking over)."""

    async def runs(self, serving: Collection[str], *, limit: int | None = None,
                   skip: Collection[str] = ()) -> list[str]:
        """The runs, outside ``serving`` and ``skip``, this worker should start driving
        now: at most ``batch`` (or ``limit``) per look, one while this process is busy.
        ``skip``: runs this process cannot serve (left to other workers), which do not
        keep it :attr:`live` either."""
        want = self._batch if limit is None else min(limit, self._batch)
        busy = self.load.busy() and bool(serving)  # start-up is not load
        if busy:
            want = min(want, 1)
        mine = {*serving, *skip}
        now = time.monotonic()
        swept: list[Run] | None = None
        if now - self._swept >= self._sweep:  # read first: it teaches the versions served
            self._swept = now
            swept = await active_runs(self._store)
            self.versions.learn(swept)
        found = await self._pick(mine, want) if want > 0 else []
        self.full = not busy and want > 1 and len(found) == want
        if swept is not None:
            found += await self._unserved(swept, mine, set(found), set(skip))
        elif found:
            self.live = True
        return found

    def close(self) -> None:
        """Stop measuring the load."""
        self.load.close()

    async def _pick(self, serving: Collection[str], want: int) -> list[str]:
        """``want`` of the oldest ``2 * want`` claimable runs, at random, oldest first."""
        found = await self._store.claimable_runs(limit=2 * want, exclude=tuple(serving),
                                                 versions=tuple(self.versions.served))
        if len(found) <= want:
            return found
        return [found[i] for i in sorted(self._rng.sample(range(len(found)), want))]

    async def _unserved(self, runs: list[Run], serving: Collection[str], found: set[str],
                        skip: set[str]) -> list[str]:
        """The live runs of a served version nobody serves (and no look would find)."""
        runs = [r for r in runs if self.versions.serves(r)]
        await self._parked.hold(r for r in runs if r.id not in serving)
        live = [r.id for r in runs if r.status in ("pending", "running") and r.id not in skip]
        self.live = bool(live or found)
        others = [r for r in live if r not in serving and r not in found]
        if not others:
            return []
        until = await self._store.served_until(others)
        wall = time.time()
        stranded = [r for r in others if (until.get(r) or 0.0) < wall]
        if not stranded:
            return []
        # runs with claimable work are a backlog, not stranded: looks take them, as the
        # process has room (a sweep taking them would hand one worker every such run)
        claimable = set(await self._store.claimable_runs(
            limit=len(live), exclude=tuple(serving), versions=tuple(self.versions.served)))
        return [r for r in stranded if r not in claimable]
