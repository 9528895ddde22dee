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

Several workers share a backlog: a worker whose event loop runs late (:class:`LoopLag`:
its own drives saturate it, or the host's other processes starve it) takes one new run
per look instead of a batch, leaving the rest to workers that keep up (before, the
first worker up took every run of a backlog and a second one idled); a look picks its
runs at random among the oldest twice as many, so workers looking together rarely
start on the same runs; and the sweep leaves runs with claimable work to the looks.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Collection

from orchestra.coordinator.serving import ParkedRuns, active_runs
from orchestra.store.protocol import Blackboard

LATE = 0.02
"""Mean lateness (s) of the event loop's ticks from which a process counts as busy."""


class LoopLag:
    """How late the event loop runs a callback due every ``tick`` seconds: the mean
    lateness since the last reading. A process whose loop runs late has no room for
    more work, whether its own drives or other processes on the host hold the CPU."""

    def __init__(self, tick: float = 0.05) -> None:
        self._tick = tick
        self._late, self._beats = 0.0, 0
        self._due = 0.0
        self._handle: asyncio.TimerHandle | None = None

    def read(self) -> float:
        """The mean lateness since the last reading (starts the ticks on first use); a
        tick overdue now counts too, so a loop too busy to run any still reads late."""
        now = asyncio.get_running_loop().time()
        if self._handle is None:
            self._schedule(now)
        late, beats = self._late, self._beats
        if now > self._due:
            late, beats = late + now - self._due, beats + 1
        self._late, self._beats = 0.0, 0
        return late / beats if beats else 0.0

    def close(self) -> None:
        if self._handle is not None:
            self._handle.cancel()

    def _schedule(self, now: float) -> None:
        self._due = now + self._tick
        self._handle = asyncio.get_running_loop().call_at(self._due, self._beat)

    def _beat(self) -> None:
        now = asyncio.get_running_loop().time()
        self._late += max(0.0, now - self._due)
        self._beats += 1
        self._schedule(now)


class WorkFinder:
    """Finds the runs a worker has work in, and whether any run is still live."""

    def __init__(self, store: Blackboard, parked: ParkedRuns, *, lease_seconds: float,
                 batch: int = 64, lag: LoopLag | None = None,
                 rng: random.Random | None = None) -> None:
        self._store, self._parked = store, parked
        self._sweep, self._batch = min(lease_seconds / 3, 2.0), batch
        self._swept = -self._sweep
        self.lag = lag or LoopLag()
        self._rng = rng or random.Random()
        self.live = True
        """Whether the last sweep saw a run that is pending or running (or a look found
        claimable work): a worker is idle only once none is left, not while another
        worker holds the last tasks (their leases may yet expire and need taking over)."""

    async def runs(self, serving: Collection[str], *, limit: int | None = None) -> list[str]:
        """The runs, outside ``serving``, this worker should start driving now: at most
        ``batch`` (or ``limit``) per look, one while the process runs late."""
        want = self._batch if limit is None else min(limit, self._batch)
        if self.lag.read() >= LATE and serving:
            want = min(want, 1)
        found = await self._pick(serving, want) if want > 0 else []
        now = time.monotonic()
        if now - self._swept >= self._sweep:
            self._swept = now
            found += await self._unserved(serving, set(found))
        elif found:
            self.live = True
        return found

    def close(self) -> None:
        """Stop measuring the loop's lag."""
        self.lag.close()

    async def _pick(self, serving: Collection[str], want: int) -> list[str]:
        """``want`` of the oldest ``2 * want`` claimable runs, at random, oldest first."""
        found = await self._store.claimable_runs(limit=2 * want, exclude=tuple(serving))
        if len(found) <= want:
            return found
        return [found[i] for i in sorted(self._rng.sample(range(len(found)), want))]

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
        stranded = [r for r in others if (until.get(r) or 0.0) < wall]
        if not stranded:
            return []
        # runs with claimable work are a backlog, not stranded: looks take them, as the
        # process has room (a sweep taking them would hand one worker every such run)
        claimable = set(await self._store.claimable_runs(limit=len(live),
                                                         exclude=tuple(serving)))
        return [r for r in stranded if r not in claimable]
