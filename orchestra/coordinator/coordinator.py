"""The coordinator: starts, drives, resumes and cancels runs of a pipeline.

It claims ready tasks (global and per-role concurrency), runs each through the
runtime under a heartbeated lease, retries failures with backoff, and decides
when a run is finished. Any number of coordinators/workers may serve one store;
the store's leases guarantee a task attempt runs in one place only.

Following one run, :meth:`Coordinator.drive` reads top to bottom:

1. **claim**: mark the run running and served, and claim its first tasks (``_fill``:
   ``claim_tasks`` within ``Jobs.free_slots``, of runs on this pipeline's version only);
2. **execute**: each claimed task runs in a job (``TaskExecutor.execute`` in
   ``execution.py``); the runtime's ``TaskRunner.run`` returns how it ended, as data;
3. **hand in**: the executor commits a completed task with its route's postings and
   the claim of the run's next tasks (``claim_spec`` below) in one transaction
   (``store.complete_task(..., claim=)``); the job runs the first claimed task itself,
   the rest get jobs;
4. **next**: meanwhile the drive's loop sleeps until a job ends or asks for a refill,
   then stops, pauses, claims more, or finishes the run (``_next``).

The bookkeeping (jobs by run and role, wake-ups, refill flags, cancelled runs, free
slots) lives in :class:`~orchestra.coordinator.jobs.Jobs`; noticing a cancel made by
another process in :class:`~orchestra.coordinator.cancel_watch.CancelWatch`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any, Literal

from orchestra._entries import Entry
from orchestra._errors import NotFoundError, StoreError, UserError
from orchestra._log import get_logger
from orchestra._types import (
    JSON,
    LIVE_RUN_STATUSES,
    TERMINAL_RUN_STATUSES,
    Run,
    RunStatus,
    Task,
)
from orchestra.coordinator.board_end import board_end, end_by_board
from orchestra.coordinator.cancel_watch import CancelWatch
from orchestra.coordinator.execution import TaskExecutor, TaskServices
from orchestra.coordinator.jobs import Jobs
from orchestra.coordinator.owners import dead_local_owners, new_owner_id
from orchestra.coordinator.pipeline import Pipeline
from orchestra.coordinator.resumable import CANCELLABLE, INTERRUPTED_EVENT, check_resumable
from orchestra.coordinator.settings import CoordinatorSettings as CoordinatorSettings
from orchestra.coordinator.subscriptions import catch_up, post_entry
from orchestra.coordinator.versions import check_version
from orchestra.mcp.hub import MCPHub, MCPSetup
from orchestra.models.base import Model, runs_locally
from orchestra.models.prices import PriceBook, Pricer, layered
from orchestra.runtime.agent_state import AgentState, agent_id_for
from orchestra.store.entry_protocol import NewEntry
from orchestra.store.protocol import Blackboard, ClaimSpec

if TYPE_CHECKING:
    from orchestra.tracing import Tracing

log = get_logger("orchestra.coordinator")

_LIVE = LIVE_RUN_STATUSES
_PAUSED: tuple[RunStatus, ...] = ("paused", "stalled")


class Coordinator:
    """Drives runs of one pipeline against one store."""

    def __init__(self, store: Blackboard, pipeline: Pipeline, *,
                 models: Mapping[str, Model] | None = None,
                 settings: CoordinatorSettings = CoordinatorSettings(),
                 owner: str | None = None, tracing: Tracing | None = None,
                 prices: PriceBook | None = None,
                 cancel_watch: CancelWatch | None = None, mcp: MCPHub | None = None) -> None:
        self.store = store
        self.pricer = Pricer(layered(pipeline.prices, prices))
        """Prices every model call when it is made (``prices``' overrides, then the
        pipeline's, then genai-prices' table); the cost is journaled with the call."""
        self.tracing = tracing
        """OpenTelemetry spans for runs, tasks and steps (``orchestra.tracing``); off if None."""
        self.pipeline = pipeline
        self.settings = settings
        self.owner = owner or new_owner_id()
        self.models = self._resolve_models(models or {})
        self.pricer.local.update(m.name for m in self.models.values() if runs_locally(m))
        self.agents: dict[str, AgentState] = {}
        self.jobs = Jobs()
        """The bookkeeping: running jobs, wake-ups, refills, cancelled runs, free slots."""
        self._left: set[str] = set()  # runs whose drive told the store it stopped serving
        self._watch = cancel_watch or CancelWatch(store, settings.cancel_poll)
        """Notices cancels made elsewhere; a serving process shares one among the
        coordinators of all its runs (one status read per poll, not one per run)."""
        self.mcp = mcp or MCPHub()
        """The MCP servers' live sessions (pass one hub to share them between coordinators);
        ``await coordinator.mcp.aclose()`` stops them, as the process's end does."""
        self._services = TaskServices(store, pipeline, self.models, settings, self.owner,
                                      self.pricer, tracing, self.agent, self.claim_spec,
                                      MCPSetup(self.mcp, tuple(pipeline.mcp)))
        self._role_limits = {r.name: type(r).concurrency for r in pipeline.roles}

    def _resolve_models(self, overrides: Mapping[str, Model]) -> dict[str, Model]:
        resolved: dict[str, Model] = {}
        for role in self.pipeline.roles:
            model: Any = overrides.get(role.name) or type(role).model or self.pipeline.model
            if isinstance(model, str):
                from orchestra.models.spec import load_model  # adapters load lazily
                model = load_model(model)
            if model is None:
                raise UserError(f"role {role.name!r} has no model: set `model` on the role, "
                                "pass Pipeline(model=...), or --model on the command line")
            resolved[role.name] = self.tracing.wrap(model) if self.tracing else model
        return resolved

    # -- public API ----------------------------------------------------------------
    async def start(self, run_input: Any, *, run_id: str | None = None,
                    settings: JSON = None) -> Run:
        """Create the run and its first tasks (atomically); does not drive it.
        ``settings``: what the caller chose for the run (e.g. model specs), recorded
        apart from the pipeline's input."""
        tasks = self.pipeline.first_tasks(run_input)
        name = self.pipeline.reference() or self.pipeline.name
        version = self.pipeline.fingerprint
        return await self.store.create_run(name, run_input, run_id=run_id, tasks=tasks,
                                           settings=settings, version=version.id,
                                           manifest=version.manifest())

    async def run(self, run_input: Any, *, run_id: str | None = None) -> Run:
        """Start a run and drive it to the end (or until it waits for a human)."""
        run = await self.start(run_input, run_id=run_id)
        return await self.drive(run.id, _started=run)

    async def resume(self, run_id: str) -> Run:
        """Continue a run after a crash, a cancel-free stop or a raised cap."""
        run = await self.store.get_run(run_id)
        self.check_resumable(run)
        running = await self.store.list_tasks(run_id, status="running")
        dead = dead_local_owners({t.lease_owner for t in running}, me=self.owner)
        released = await self.store.release_leases(run_id, owners=dead)
        # release_leases requeued the dead owners' tasks and every lease expired by the
        # STORE's clock (PostgreSQL's, not this host's, which may be off): what it left
        # running is held by a live owner
        freed = {t.id for t in released}
        live = [t for t in running if t.id not in freed]
        if live and run.status == "running":
            raise UserError(f"run {run_id} is being run by another worker "
                            f"({live[0].lease_owner}); wait for it, or stop that process")
        if run.status == "failed":
            await self._revive_failed(run_id)
        elif run.status in _PAUSED:  # its tasks are still pending: they simply continue
            await self._transition(run_id, "running", only_from=_PAUSED)
        log.info("resume", run=run_id, requeued=len(released))
        return await self.drive(run_id)

    def check_resumable(self, run: Run) -> None:
        """Raise ``UserError`` if ``run`` is finished for good (completed or cancelled),
        paused by its token cap with this coordinator's cap no higher than what it used,
        or on another version than this coordinator's pipeline."""
        check_resumable(run, self.settings.max_tokens_per_run,
                        cost_cap=self.settings.max_cost_per_run)
        # a run keeps the code it started with (VersionMismatchError names both versions)
        check_version(run.id, run.version, self.pipeline.fingerprint)

    async def post_entry(self, run_id: str, new: NewEntry, author: str = "operator") -> Entry:
        """Post ``entry(model, scope=...)`` with the tasks it triggers, in one transaction."""
        return await post_entry(self.pipeline, self.store, run_id, new, author)

    async def cancel(self, run_id: str) -> Run:
        """Cancel a run: no new steps start; running tasks here stop; state stays consistent."""
        run = await self.store.set_run_status(run_id, "cancelled", only_from=CANCELLABLE)
        self.jobs.stop_run(run_id)
        return run

    async def interrupted(self, run_id: str) -> None:
        """This process stops driving ``run_id`` (Ctrl-C): hand its leases back and leave
        the run at once, and say so in the event log, so every reader tells an interrupted
        run (resumable now) from one whose worker died (taken over after its lease)."""
        await asyncio.gather(self.store.release_leases(run_id, owners=[self.owner]),
                             self._unserve(run_id))
        # last: readers look for it as the run's latest event
        await self.store.append_event(run_id, INTERRUPTED_EVENT, {"owner": self.owner})

    # -- the scheduling loop -------------------------------------------------------
    async def drive(self, run_id: str, *, _started: Run | None = None) -> Run:
        """Run tasks of ``run_id`` until every task is finished, or it waits or stops.

        (``_started``: the run as :meth:`run` just created it, so nobody has written to
        it yet: its agents start empty without reading the store.)"""
        if self.tracing is None:
            return await self._drive(run_id, _started)
        await self.tracing.run_started(self.store, _started or await self.store.get_run(run_id))
        final: Run | None = None
        error: BaseException | None = None
        try:
            final = await self._drive(run_id, _started)
            return final
        except BaseException as exc:
            error = exc
            raise
        finally:
            self.tracing.run_ended(run_id, final.status if final else None, error)

    async def _drive(self, run_id: str, started: Run | None) -> Run:
        run = started or await self.store.get_run(run_id)
        if run.status in TERMINAL_RUN_STATUSES:
            return run
        # before its first claim: another version's run is not ours
        check_version(run.id, run.version, self.pipeline.fingerprint)
        if started is not None and not self.settings.shared:
            for role in self.pipeline.roles:  # a run made just now: nobody wrote to it yet
                self.agent(run_id, role.name).loaded = True
        executor = TaskExecutor(self._services, self.jobs)
        # the leases of the tasks the first claim starts are renewed from the start: that
        # claim shares its commit with the writes below, which a busy store may hold up
        beats = asyncio.create_task(executor.heartbeat_loop(run_id))
        # 1. claim. Sent together, these share one group commit (one round trip to the
        # store's writer): the run's status, the store learning that the run is served
        # (renewed with the leases, so it is not an orphan), and the first claim (which
        # takes nothing from a run another process has finished or cancelled meanwhile).
        try:
            moved, _, found = await asyncio.gather(
                self._transition(run_id, "running", only_from=("pending", "waiting"))
                if run.status != "running" else _same(run),
                self.store.serve_run(run_id, self.owner, self.settings.lease_seconds),
                self._fill(run_id, executor))
        except BaseException:
            beats.cancel()
            await self._stop_all(run_id)
            raise
        self._watch.watch(run_id, self._cancelled_elsewhere)
        try:
            if moved.status in TERMINAL_RUN_STATUSES:
                await self._stop_all(run_id)
                return moved  # another process finished or cancelled it meanwhile
            # 2. execute and 3. hand in happen in the jobs _fill started (TaskExecutor);
            # 4. next: this loop wakes when a job ends or asks for more, and decides
            idle = self.settings.poll_interval
            looked = not found  # the first claim found nothing: do not look again at once
            while True:
                ended, idle = await self._next(run_id, executor, idle, looked)
                looked = False
                if ended == "cancelled" or ended == "left":
                    break
                if ended is not None:
                    return ended
                if not await self.jobs.wait(run_id, idle):
                    self.jobs.ask_refill(run_id)  # timed out: others may have made work
        except BaseException:
            await self._stop_all(run_id)
            raise
        finally:
            beats.cancel()
            self._watch.unwatch(run_id, self._cancelled_elsewhere)
            if run_id not in self._left:
                with contextlib.suppress(StoreError):  # a broken store: it just expires
                    await asyncio.shield(self._unserve(run_id))
            self._left.discard(run_id)
        await self._stop_all(run_id)
        return await self.store.get_run(run_id)

    async def _next(self, run_id: str, executor: TaskExecutor, idle: float, looked: bool = False,
                    ) -> tuple[Run | Literal["cancelled", "left"] | None, float]:
        """One wake-up of the drive's loop: raise the store's failure, pause for a cap,
        claim more work if asked, notice a cancel, finish the run once nothing is left.
        Returns the run as it ended, ``"cancelled"``, ``"left"`` (nothing to do here, and
        ``leave_idle``), or None (keep driving), and how
        long to sleep before the next look: ``idle`` doubled after a look that found
        nothing (up to ``idle_poll_max``), ``poll_interval`` after one that found work.
        ``looked``: the drive just looked and found nothing, so this wake-up does not
        claim again (it finishes the run, leaves it, or waits a poll)."""
        if executor.fatal is not None:
            await self._stop_all(run_id)
            raise executor.fatal
        if executor.stop_error is not None:  # a cap: paused, resumable
            await self._stop_all(run_id)
            return await self._transition(run_id, "paused", error=executor.stop_error), idle
        if not looked and (self.jobs.take_refill(run_id) or not self.jobs.has(run_id)):
            found = await self._fill(run_id, executor)
            idle = self.settings.poll_interval if found else \
                min(2 * idle, max(self.settings.idle_poll_max, idle))
        if self.jobs.stopped(run_id):
            return "cancelled", idle
        ends = await board_end(self.pipeline, self.store, run_id)
        if ends is not None:  # done, or stalled: what is left stays undone
            await self._stop_all(run_id)
            return await end_by_board(self.store, run_id, ends, self._transition,
                                      self._unserve), idle
        if not self.jobs.has(run_id):
            done = await self._finish_if_done(run_id)
            if done is None and self.settings.leave_idle:
                return "left", idle  # another worker holds its work, or a retry is due later
            return done, idle
        return None, idle

    def _cancelled_elsewhere(self, run_id: str) -> None:
        """Another process cancelled ``run_id``: stop its running tasks here (asyncio
        cancellation of their model and tool calls; the store already recorded their
        steps as cancelled and refuses any further write for them) and end its drive."""
        if self.jobs.stopped(run_id):
            return
        log.info("run cancelled elsewhere; stopping its tasks", run=run_id)
        self.jobs.stop_run(run_id)

    def claim_spec(self, task: Task) -> ClaimSpec | None:
        """What the worker finishing ``task`` should claim in the same transaction."""
        if self.jobs.stopped(task.run_id):
            return None
        capacity, free = self.jobs.free_slots(self._role_limits, self.settings.concurrency,
                                              finishing=task.role)
        if free <= 0 or not any(n > 0 for n in capacity.values()):
            return None
        return ClaimSpec(self.owner, capacity, free, task.run_id, self.settings.lease_seconds,
                         (self.pipeline.fingerprint.id,))

    async def _fill(self, run_id: str, executor: TaskExecutor) -> bool:
        """Claim the run's ready tasks into the free slots, and run them; whether any."""
        if self.jobs.stopped(run_id):
            return False
        capacity, free = self.jobs.free_slots(self._role_limits, self.settings.concurrency)
        if free <= 0 or not any(n > 0 for n in capacity.values()):
            return False
        tasks = await self.store.claim_tasks(self.owner, run_id=run_id, capacity=capacity,
                                             limit=free, lease_seconds=self.settings.lease_seconds,
                                             versions=(self.pipeline.fingerprint.id,))
        executor.start(run_id, tasks)
        return bool(tasks)

    async def _stop_all(self, run_id: str) -> None:
        jobs = self.jobs.of_run(run_id)
        for job in jobs:
            job.cancel()
        if jobs:
            await asyncio.gather(*jobs, return_exceptions=True)
            # stopped mid-task: hand the leases back so a resume need not wait for expiry
            with contextlib.suppress(StoreError):  # a broken store: the lease just expires
                await asyncio.shield(self.store.release_leases(run_id, owners=[self.owner]))
        self.jobs.forget(run_id)

    async def _finish_if_done(self, run_id: str) -> Run | None:
        counts = await self.store.task_counts(run_id)
        if counts.get("running", 0) or counts.get("pending", 0):
            return None  # another worker is busy, or a retry is scheduled
        if await catch_up(self.pipeline, self.store, run_id):
            self.jobs.wake(run_id)  # the board called for work nobody was given: claim it
            return None
        if counts.get("waiting", 0):
            run = await self._transition(run_id, "waiting", only_from=("pending", "running"))
            if self.settings.wait_for_approvals and run.status == "waiting":
                return None
            return run
        if counts.get("failed", 0) and self.pipeline.fail_run_on_task_failure:
            failed = await self.store.list_tasks(run_id, status="failed")
            reasons = "; ".join(f"{t.role} task {t.id}: {t.error}" for t in failed[:3])
            return await self._transition(run_id, "failed", error=reasons)
        # the run's end and this process leaving it share one group commit
        run, _ = await asyncio.gather(self._transition(run_id, "completed"),
                                      self._unserve(run_id))
        return run

    async def _unserve(self, run_id: str) -> None:
        """Tell the store this process no longer serves ``run_id`` (once per drive)."""
        self._left.add(run_id)
        await self.store.serve_run(run_id, self.owner, 0)

    async def _transition(self, run_id: str, status: RunStatus, *, error: str | None = None,
                          only_from: Collection[RunStatus] = _LIVE) -> Run:
        """Set the run's status unless another process already moved it out of ``only_from``
        (else a run cancelled elsewhere was flipped to ``completed`` by its driver, and two
        workers finishing one run each logged ``run.completed``); return the run as it is."""
        try:
            return await self.store.set_run_status(run_id, status, error=error,
                                                   only_from=only_from)
        except NotFoundError:
            raise
        except UserError:
            return await self.store.get_run(run_id)

    async def _revive_failed(self, run_id: str) -> None:
        """A failed run being resumed: its failed tasks get another go (a fresh journal
        retry each); tasks a usage cap stopped are pending and continue."""
        retried = await self.store.retry_failed_tasks(run_id)
        await self.store.set_run_status(run_id, "running")
        if retried:
            log.info("retrying failed tasks", run=run_id, tasks=len(retried))

    def agent(self, run_id: str, role: str) -> AgentState:
        """The in-memory state of ``run_id``'s agent for ``role`` (made on first use)."""
        key = agent_id_for(run_id, role)
        state = self.agents.get(key)
        if state is None:
            state = self.agents[key] = AgentState(key, role, run_id,
                                                  exclusive=not self.settings.shared)
        return state


async def _same(run: Run) -> Run:
    return run
