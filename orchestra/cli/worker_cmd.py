"""``orchestra worker``: serve a store's runs until interrupted or idle.

Without ``--run`` a worker drives only the runs it has work in (``WorkFinder``). Two
things keep one run from holding up the rest:

* A run this process cannot serve (its pipeline does not import here, its recorded
  models cannot be built) is reported once and left to other workers, looked at again
  after :data:`RETRY_UNSERVABLE` seconds; before, its error ended the worker, so every
  worker started on the store stopped at the same run and the others were never served.
* A drive that fails is reported and its run looked at again after the same pause (its
  leases lapse and are taken over as a killed worker's would), as ``orchestra serve``'s
  pool does; the other runs go on.

The runs a look finds are started together: each start reads the run and its recorded
settings, so one at a time a look of 64 runs took ~0.1 s before its last run's first claim.

Ctrl-C stops every drive while the store is still open, so each hands its tasks' leases
back and another worker goes on at once (``interrupts`` says how many runs stopped).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import time

from orchestra._errors import UserError
from orchestra._types import Run
from orchestra.cli import inspect_cmds
from orchestra.cli.commands import _exit_code, _prices, _settings, open_store
from orchestra.cli.exit_codes import EXIT_OK
from orchestra.cli.interrupts import Interrupt
from orchestra.coordinator.cancel_watch import CancelWatch
from orchestra.coordinator.coordinator import Coordinator
from orchestra.coordinator.finding import WorkFinder
from orchestra.coordinator.owners import new_owner_id
from orchestra.coordinator.pipeline import load_pipeline
from orchestra.coordinator.run_models import models_for_run as _models
from orchestra.coordinator.run_models import recorded_cap, recorded_settings
from orchestra.coordinator.serving import ParkedRuns, needs_driving, why_not_served
from orchestra.mcp.hub import MCPHub
from orchestra.store import Blackboard
from orchestra.store import url as store_url

_LOOK, _LOOK_MAX = 0.2, 2.0  # s between looks for work; a look finding none doubles it
_LOOK_AGAIN, _AGAIN_LOOKS = 0.05, 3
"""After a look that took a whole batch, the next ``_AGAIN_LOOKS`` looks come every
``_LOOK_AGAIN`` seconds while they find runs: a backlog is taken as fast as this
process's load allows (a busy one still takes one run per look), not a batch per
:data:`_LOOK`. A process busy for longer keeps to :data:`_LOOK`, so a worker started
later still finds its share."""
RETRY_UNSERVABLE = 30.0
"""Seconds before a worker looks again at a run it could not serve (or whose drive
failed here)."""


async def cmd_worker(args: argparse.Namespace, state: Interrupt) -> int:
    """Serve active runs until interrupted (or idle for --idle-exit seconds); a waiting run
    is continued as soon as a human decides its approval, as `orchestra serve` does."""
    settings = _settings(args, shared=True)  # bad flags fail before anything is opened
    if args.idle_exit is not None and not args.idle_exit >= 0:  # NaN too
        raise UserError(f"--idle-exit must be >= 0 seconds, got {args.idle_exit:g} (0: exit "
                        "as soon as no run is active)")
    async with open_store(args, must_exist=True) as store:
        watch = CancelWatch(store, settings.cancel_poll)  # one status read for all runs
        hub = MCPHub()  # the MCP servers of the runs' roles: shared, stopped at the end
        try:
            if args.run:
                return await _serve_one(args, store, watch, hub)
            return await _serve_all(args, state, store, watch, hub)
        finally:
            await hub.aclose()


async def _serve_one(args: argparse.Namespace, store: Blackboard, watch: CancelWatch,
                     hub: MCPHub) -> int:
    """``--run``: that run only, until it stops needing a driver; its errors end the worker
    (the user asked for that run)."""
    args.run = await inspect_cmds.resolve_run(store, args.run)
    run = await store.get_run(args.run)
    if not await needs_driving(store, run):
        raise UserError(why_not_served(run, f"--db {store_url.label(args.db)}"))
    last: Run | None = None
    while True:
        job = await _serve_run(args, store, run, watch, hub, leave=False)
        last = await job
        _report_end(args, last)
        run = await store.get_run(args.run)  # a drive follows its run; read once it stops
        if not await needs_driving(store, run):
            return _exit_code(last.status)
        await asyncio.sleep(_LOOK)


async def _serve_all(args: argparse.Namespace, state: Interrupt, store: Blackboard,
                     watch: CancelWatch, hub: MCPHub) -> int:
    serving: dict[str, asyncio.Task[Run]] = {}
    state.serving = serving  # what Ctrl-C stopped (``interrupts.interrupted``)
    skipped: dict[str, float] = {}  # run -> monotonic time it may be looked at again
    finder = WorkFinder(store, ParkedRuns(store, new_owner_id(), args.lease),
                        lease_seconds=args.lease)
    loop = asyncio.get_running_loop()
    idle_since, pause, again = loop.time(), _LOOK, 0
    try:
        while True:
            now = time.monotonic()
            skipped = {r: until for r, until in skipped.items() if until > now}
            found = await finder.runs(serving, skip=skipped)
            await _start(args, store, watch, hub, found, serving, skipped)
            again = _AGAIN_LOOKS if finder.full else max(0, again - 1)
            pause = (_LOOK_AGAIN if again else _LOOK) if found else min(2 * pause, _LOOK_MAX)
            for run_id, job in list(serving.items()):
                if job.done():
                    del serving[run_id]
                    if _ended(args, run_id, job, skipped):
                        pause = _LOOK
            if serving or finder.live:
                idle_since = loop.time()
            elif args.idle_exit is not None and loop.time() - idle_since >= args.idle_exit:
                return EXIT_OK
            await asyncio.sleep(pause)
    finally:
        finder.close()
        await _stop(serving)


async def _stop(serving: dict[str, asyncio.Task[Run]]) -> None:
    """Stop the drives still running (Ctrl-C, or an error ending the worker) while the
    store is open: each hands its tasks' leases back, so another worker goes on at once.
    Left to ``asyncio.run``'s own cleanup they stopped after the store had closed, and
    their tasks stayed leased until the lease ran out."""
    jobs = [job for job in serving.values() if not job.done()]
    for job in jobs:
        job.cancel()
    if jobs:
        await asyncio.shield(asyncio.gather(*jobs, return_exceptions=True))


async def _start(args: argparse.Namespace, store: Blackboard, watch: CancelWatch, hub: MCPHub,
                 found: list[str], serving: dict[str, asyncio.Task[Run]],
                 skipped: dict[str, float]) -> None:
    """Start driving the runs a look found, together. A run that cannot be served here
    is reported and skipped; any other error ends the worker once the others started."""

    async def one(run_id: str) -> asyncio.Task[Run]:
        return await _serve_run(args, store, await store.get_run(run_id), watch, hub,
                                leave=True)

    started = await asyncio.gather(*(one(r) for r in found), return_exceptions=True)
    failure: BaseException | None = None
    for run_id, outcome in zip(found, started, strict=True):
        if isinstance(outcome, asyncio.Task):
            serving[run_id] = outcome
        elif isinstance(outcome, UserError):
            _skip(args, run_id, f"cannot serve run {run_id} here: {outcome}", skipped)
        else:
            failure = failure or outcome
    if failure is not None:
        raise failure


def _ended(args: argparse.Namespace, run_id: str, job: asyncio.Task[Run],
           skipped: dict[str, float]) -> bool:
    """Report a drive that stopped; whether the run stopped for good here (not merely
    left for lack of work)."""
    if job.cancelled():
        return False
    error = job.exception()
    if error is not None:
        why = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
        _skip(args, run_id, f"driving run {run_id} failed ({why})", skipped)
        return True
    last = job.result()
    if last.status in ("pending", "running"):
        return False
    _report_end(args, last)
    return True


def _report_end(args: argparse.Namespace, run: Run) -> None:
    if run.status not in ("pending", "running"):
        inspect_cmds.emit(args, {"run": run.id, "status": run.status},
                          f"run {run.id}: {run.status}")


def _skip(args: argparse.Namespace, run_id: str, why: str, skipped: dict[str, float]) -> None:
    """Leave ``run_id`` to other workers for a while, saying why (once per pause)."""
    skipped[run_id] = time.monotonic() + RETRY_UNSERVABLE
    inspect_cmds.emit(args, {"run": run_id, "skipped": why, "retry_in_s": RETRY_UNSERVABLE},
                      f"worker: {why}; serving the other runs, trying this one again in "
                      f"{RETRY_UNSERVABLE:g} s")


async def _serve_run(args: argparse.Namespace, store: Blackboard, run: Run,
                     watch: CancelWatch, hub: MCPHub, *, leave: bool) -> asyncio.Task[Run]:
    pipeline = load_pipeline(run.pipeline, run.input)
    recorded = await recorded_settings(store, run)  # its log read once: the cap is in it
    coord = Coordinator(store, pipeline, models=_models(pipeline, recorded, args.model),
                        settings=dataclasses.replace(
                            _settings(args, shared=True, cap=recorded_cap(recorded),
                                      cost_cap=recorded.get("max_cost")), leave_idle=leave),
                        prices=_prices(args), cancel_watch=watch, mcp=hub)
    if not args.json:
        print(f"worker {coord.owner}: serving run {run.id}")
    return asyncio.create_task(coord.drive(run.id))
