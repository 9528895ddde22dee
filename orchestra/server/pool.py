"""The server's workers: drive the store's active runs in the background.

The same coordinator as ``orchestra worker``, in shared mode: several servers and
workers may serve one store, the store's leases keeping each task attempt in one
place. A run is driven here whether or not any client is connected. As a worker
does (``WorkFinder``), the pool drives only runs it can claim work in and a drive
leaves its run once it has none, so its ``workers`` slots go to runs with work, not
to the oldest active ones another process holds. Its first scan takes every active
run, so a restarted server picks up what a killed one was running (tasks leased by a
dead process on this host go back to the queue at once instead of waiting for the
lease to expire).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence
from dataclasses import replace

import structlog

from orchestra._errors import UserError
from orchestra._types import Run
from orchestra.coordinator.cancel_watch import CancelWatch
from orchestra.coordinator.coordinator import Coordinator, CoordinatorSettings
from orchestra.coordinator.finding import WorkFinder
from orchestra.coordinator.owners import dead_local_owners, new_owner_id
from orchestra.coordinator.pipeline import load_pipeline
from orchestra.coordinator.run_models import models_for_run, recorded_cap, recorded_settings
from orchestra.coordinator.serving import ParkedRuns, needs_driving
from orchestra.coordinator.versions import check_version
from orchestra.mcp.hub import MCPHub
from orchestra.models.prices import PriceBook
from orchestra.store.protocol import Blackboard

log = structlog.get_logger("orchestra.server")

_ERROR_BACKOFF = 5.0
"""Seconds before a run whose driving raised is tried again."""


class RunPool:
    """Up to ``workers`` runs driven at once by this process."""

    def __init__(self, store: Blackboard, *, workers: int, settings: CoordinatorSettings,
                 models: Sequence[str] = (), scan_interval: float = 0.5,
                 prices: PriceBook | None = None) -> None:
        self._store = store
        self._prices = prices
        self.workers = workers
        self._settings = replace(settings, leave_idle=True)
        self._models = tuple(models)
        self._scan_interval = scan_interval
        self._jobs: dict[str, tuple[Coordinator, asyncio.Task[None]]] = {}
        self._not_before: dict[str, float] = {}
        self.unservable: dict[str, str] = {}
        """Runs this server cannot drive (pipeline or model not loadable here) and why."""
        self._wake = asyncio.Event()
        self._parked = ParkedRuns(store, new_owner_id(), settings.lease_seconds)
        self._finder = WorkFinder(store, self._parked, lease_seconds=settings.lease_seconds)
        self._scanned_all = False
        self._watch = CancelWatch(store, settings.cancel_poll)
        """Shared by the coordinators of every run this pool drives: one status read per
        poll for all of them."""
        self._mcp = MCPHub()
        """The MCP servers of the runs' roles, shared by every run; stopped at ``close``."""

    def serving(self, run_id: str) -> bool:
        return run_id in self._jobs

    def kick(self) -> None:
        """Look for work now (a run was created, resumed or an approval decided)."""
        self._wake.set()

    async def run(self) -> None:
        """Scan for runs to drive until cancelled."""
        while True:
            self._wake.clear()
            if self.workers > len(self._jobs):
                try:
                    await self._scan()
                except Exception as exc:  # a broken store: keep the server up, try again
                    log.warning("scan failed", error=str(exc))
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._scan_interval):
                    await self._wake.wait()

    async def _scan(self) -> None:
        if not self._scanned_all:
            await self._scan_all()
            self._scanned_all = True
            return
        now = time.monotonic()
        for run_id in await self._finder.runs(self._jobs, limit=self.workers - len(self._jobs)):
            if len(self._jobs) >= self.workers:
                return
            if run_id not in self._jobs and self._not_before.get(run_id, 0.0) <= now:
                await self._serve(await self._store.get_run(run_id))

    async def _scan_all(self) -> None:
        """Every active run in turn, oldest first (a drive with nothing to do leaves)."""
        now = time.monotonic()
        runs = await self._store.list_runs(active_only=True, limit=1000)
        versions = self._finder.versions
        versions.learn(runs)
        runs = [r for r in runs if versions.serves(r)]  # another version's: not ours to take
        await self._parked.hold(r for r in runs if r.id not in self._jobs)
        for run in reversed(runs):  # oldest first
            if len(self._jobs) >= self.workers:
                return
            if run.id in self._jobs or self._not_before.get(run.id, 0.0) > now:
                continue
            if not await needs_driving(self._store, run):
                continue  # parked on a human: held below, driven once someone decides
            await self._serve(run)

    async def _serve(self, run: Run) -> None:
        recorded = await recorded_settings(self._store, run)  # its log read once
        cap = recorded_cap(recorded)
        settings = self._settings if cap is None or self._settings.max_tokens_per_run \
            else replace(self._settings, max_tokens_per_run=cap)  # a server-wide cap wins
        try:
            pipeline = load_pipeline(run.pipeline, run.input)
            check_version(run.id, run.version, pipeline.fingerprint)
            if recorded.get("max_cost") and settings.max_cost_per_run is None:
                settings = replace(settings, max_cost_per_run=float(recorded["max_cost"]))
            coord = Coordinator(self._store, pipeline,
                                models=models_for_run(pipeline, recorded, self._models),
                                settings=settings, prices=self._prices,
                                cancel_watch=self._watch, mcp=self._mcp)
        except UserError as exc:
            if run.id not in self.unservable:
                log.warning("cannot serve run", run=run.id, error=str(exc))
            self.unservable[run.id] = str(exc)
            self._not_before[run.id] = time.monotonic() + 30.0
            return
        self.unservable.pop(run.id, None)
        running = await self._store.list_tasks(run.id, status="running")
        dead = dead_local_owners({t.lease_owner for t in running}, me=coord.owner)
        if dead:
            await self._store.release_leases(run.id, owners=dead)
        job = asyncio.create_task(self._drive(coord, run.id), name=f"drive {run.id}")
        self._jobs[run.id] = (coord, job)
        log.info("serving run", run=run.id, owner=coord.owner)

    async def _drive(self, coord: Coordinator, run_id: str) -> None:
        backoff = 0.0
        try:
            final = await coord.drive(run_id)
            log.info("run left this server", run=run_id, status=final.status)
            if final.status in ("pending", "running"):
                backoff = 1.0  # stopped without finishing (a cap, a cancel race): not hot
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.error("driving run failed", run=run_id, error=str(exc))
            backoff = _ERROR_BACKOFF
        finally:
            self._jobs.pop(run_id, None)
            if backoff:
                self._not_before[run_id] = time.monotonic() + backoff
            self.kick()

    async def cancel(self, run_id: str) -> Run | None:
        """Cancel a run driven here (its running tasks stop now); ``None`` if not ours."""
        entry = self._jobs.get(run_id)
        return None if entry is None else await entry[0].cancel(run_id)

    async def unserved(self, run_id: str) -> str | None:
        """Why nobody serves this active run, or ``None`` if someone does (or none must).

        The store knows who serves a run: every process driving it renews its claim
        (``served_until``: its renewals and its task leases, on the store's clock) every
        third of its lease. A run whose claims all ran out has no live worker, unless
        this server will take it at its next scan.
        """
        run = await self._store.get_run(run_id)
        if not await needs_driving(self._store, run):
            return None
        if run_id in self._jobs:
            return None
        if run_id in self.unservable:
            return f"this server cannot serve run {run_id}: {self.unservable[run_id]}"
        until = (await self._store.served_until([run_id])).get(run_id)
        if until is not None and until >= time.time():
            return None
        if self.workers > len(self._jobs):
            return None  # this server picks it up at its next scan
        since = "no worker has served it yet" if until is None else \
            f"no live worker since {time.strftime('%H:%M:%S', time.localtime(until))}"
        return (f"run {run_id} is {run.status} and {since}: start `orchestra serve` or "
                "`orchestra worker` on its store")

    async def close(self) -> None:
        """Stop driving: running tasks stop and hand their leases back (resumable)."""
        self._finder.close()
        jobs = [job for _, job in self._jobs.values()]
        for job in jobs:
            job.cancel()
        await asyncio.gather(*jobs, return_exceptions=True)
        await self._mcp.aclose()
