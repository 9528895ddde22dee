"""Executing claimed tasks: execute, hand in, next; lease heartbeat, timeout, retry.

The runtime does the work (``TaskRunner.run``) and returns how the task ended as data
(``runtime.outcomes``); this acts on it: a completed task's output is routed and the
task handed in with the run's next claim in one transaction (``_hand_in``), whose
claimed tasks run next in the same job; a failure is retried with backoff or failed for
good, a wait for a human parks the task, a cap stops the run. What it needs from its
coordinator comes in a :class:`TaskServices`, so this module never imports the
coordinator.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Protocol

import structlog

from orchestra._entries import Consumption
from orchestra._errors import (
    DeterminismError,
    LeaseLostError,
    ModelAPIError,
    OrchestraError,
    StoreError,
    UserError,
)
from orchestra._log import get_logger
from orchestra._types import JSON, AgentId, Run, Task
from orchestra.coordinator.jobs import Jobs
from orchestra.coordinator.pipeline import Pipeline
from orchestra.coordinator.settings import CoordinatorSettings
from orchestra.coordinator.subscriptions import at_task_end, tool_entry_hook
from orchestra.mcp.hub import MCPSetup
from orchestra.models.base import Model
from orchestra.models.prices import Pricer
from orchestra.runtime.agent_state import AgentState
from orchestra.runtime.journal import RecordedStepError
from orchestra.runtime.limits import RunLimits
from orchestra.runtime.outcomes import Completed, Failed, Limited, Waiting
from orchestra.runtime.task_runner import TaskRunner
from orchestra.store.protocol import ClaimSpec, Lease, StepResult, TaskStore, Writes
from orchestra.tracing import Tracing

log = get_logger("orchestra.coordinator")

_NO_LIMITS = RunLimits()


def _task_log(task: Task) -> structlog.typing.FilteringBoundLogger:
    """The coordinator's logger bound to one task; bound only when something is logged
    (most tasks log nothing, and binding costs more than the rest of a task's setup)."""
    return log.bind(run=task.run_id, task=task.id, agent=str(AgentId(task.run_id, task.role)),
                    attempt=task.attempt)


class ExecutionStore(TaskStore, Protocol):
    """What executing claimed tasks touches: what a task's run touches (``TaskStore``),
    and the task queue's end of a task (hand in, fail, heartbeat, release)."""

    async def get_run(self, run_id: str) -> Run: ...
    async def list_tasks(self, run_id: str, *, status: str | None = None,
                         role: str | None = None) -> list[Task]: ...
    async def get_consumptions(self, run_id: str) -> list[Consumption]: ...
    async def complete_task(self, task_id: str, lease: Lease, result: JSON, *,
                            agent_id: str, writes: Writes | None = None,
                            step: StepResult | None = None,
                            claim: ClaimSpec | None = None) -> list[Task]: ...
    async def fail_task(self, task_id: str, lease: Lease, error: str, *,
                        retry_at: float | None = None, agent_id: str | None = None,
                        writes: Writes | None = None) -> Task: ...
    async def heartbeat(self, task_id: str, lease: Lease, lease_seconds: float) -> bool: ...
    async def serve_run(self, run_id: str, owner: str, lease_seconds: float) -> None: ...
    async def release_leases(self, run_id: str | None = None, *,
                             owners: Collection[str] = ()) -> list[Task]: ...


@dataclass(frozen=True, slots=True)
class TaskServices:
    """What running a claimed task needs from the coordinator that claimed it."""

    store: ExecutionStore
    pipeline: Pipeline
    models: Mapping[str, Model]
    """The model of each role."""
    settings: CoordinatorSettings
    owner: str
    pricer: Pricer
    tracing: Tracing | None
    agent: Callable[[str, str], AgentState]
    """The in-memory state of a run's agent for a role: ``agent(run_id, role)``."""
    claim_spec: Callable[[Task], ClaimSpec | None]
    """What the transaction completing a task should claim next (None: nothing)."""
    mcp: MCPSetup | None = None
    """The process's MCP sessions and the pipeline's servers (roles with MCP tools)."""


class TaskExecutor:
    """Runs claimed tasks of one drive: each in a job of ``jobs``, back to back."""

    def __init__(self, services: TaskServices, jobs: Jobs) -> None:
        self.c = services
        self.jobs = jobs
        self.stop_error: str | None = None
        self.fatal: BaseException | None = None
        self.leases: dict[str, tuple[str, Lease]] = {}
        self.on_entry = tool_entry_hook(services.pipeline)  # what a tool's entries trigger

    def _retry_at(self, task: Task) -> float:
        s = self.c.settings
        delay: float = min(s.retry_base * 2.0 ** task.retries, s.retry_max)
        return time.time() + delay

    def start(self, run_id: str, tasks: list[Task]) -> None:
        """Run each of ``tasks`` (claimed for ``run_id``) in a job of its own."""
        for task in tasks:
            self.jobs.start(run_id, task.id, task.role, self.execute(task))

    async def execute(self, task: Task) -> None:
        """Run ``task``, then in the same job each task claimed as the last one completed
        (no new asyncio task per orchestra task: a pipeline's steps run back to back)."""
        agents: dict[str, AgentState] = {}  # by role: a job's tasks are of one run
        current: Task | None = task
        while current is not None:
            agent = agents.get(current.role)
            if agent is None:
                agent = agents[current.role] = self.c.agent(current.run_id, current.role)
            try:
                after = await self._execute(current, agent)
            finally:
                # whatever happened, messages this task committed join the agent's history
                agent.task_done(current.id)
            if after is not None:
                self.jobs.hand_over(current.run_id, current.id, after.id, after.role)
            current = after

    async def _execute(self, task: Task, agent: AgentState) -> Task | None:
        """Run one task and settle its outcome; the task to run next in this job, if any."""
        lease = Lease(self.c.owner, task.attempt)
        role = self.c.pipeline.role(task.role)
        self.leases[task.id] = (task.run_id, lease)
        timeout = type(role).task_timeout
        try:
            limits = _NO_LIMITS
            s = self.c.settings
            if s.max_tokens_per_run is not None or s.max_cost_per_run is not None:
                run = await self.c.store.get_run(task.run_id)
                limits = RunLimits(s.max_tokens_per_run, run.tokens_in + run.tokens_out,
                                   s.max_cost_per_run, run.cost)
            runner = TaskRunner(store=self.c.store, role=role, model=self.c.models[task.role],
                                agent=agent, task=task, lease=lease, limits=limits,
                                settings=type(role).settings, pricer=self.c.pricer,
                                check_handoff=self.c.pipeline.check_handoff, mcp=self.c.mcp,
                                on_entry=self.on_entry)
            # asyncio.timeout, not wait_for: Python 3.11's wait_for swallows a cancel that
            # lands as its work ends, and the task ran on after Ctrl-C
            async with asyncio.timeout(timeout or None):
                if self.c.tracing is None:
                    ended = await self._run(runner, task, lease, agent)
                else:
                    with self.c.tracing.task(task, agent.agent_id):
                        ended = await self._run(runner, task, lease, agent)
        except TimeoutError:
            await self._fail(task, lease, f"task timed out after {timeout:g} s", retry=True)
            return None
        except LeaseLostError as exc:
            _task_log(task).warning("lease lost", error=str(exc))  # cancelled, or taken over
            return None
        except (DeterminismError, RecordedStepError, UserError) as exc:
            _task_log(task).error("task failed", error=str(exc))
            await self._fail(task, lease, str(exc), retry=False)
            return None
        except ModelAPIError as exc:
            await self._fail(task, lease, str(exc), retry=exc.retryable)
            return None
        except StoreError as exc:  # the store itself failed: stop the run, tell the caller
            self.fatal = exc
            self.jobs.wake(task.run_id)
            return None
        except (OrchestraError, Exception) as exc:  # a bug in a role, route or tool wrapper
            _task_log(task).exception("task crashed")
            await self._fail(task, lease, f"{type(exc).__name__}: {exc}", retry=True)
            return None
        finally:
            self.leases.pop(task.id, None)
        if isinstance(ended, list):
            return self._completed(task, ended)
        await self._settle(task, lease, ended)
        return None

    async def _run(self, runner: TaskRunner, task: Task, lease: Lease, agent: AgentState
                   ) -> list[Task] | Failed | Waiting | Limited:
        """Run the task; a completed one is handed in at once (under the task's timeout
        and span, as part of its work): the tasks its hand-in claimed. Any other end is
        returned as is, to settle."""
        outcome = await runner.run()
        if isinstance(outcome, Completed):
            return await self._hand_in(task, lease, agent, outcome)
        return outcome

    async def _hand_in(self, task: Task, lease: Lease, agent: AgentState,
                       outcome: Completed) -> list[Task]:
        """Commit a completed task in ONE transaction: its result, its last model step
        and pending messages, the postings its route makes, and the claim of the run's
        next tasks (what the claim may take is decided now, as the task ends)."""
        writes = outcome.writes
        self.c.pipeline.route(task.role, outcome.output, task, writes, outcome.patched)
        # the board may end the run as this end commits: then claim nothing more
        ends = await at_task_end(self.c.pipeline, self.c.store, task, outcome.output, writes)
        spec = None if ends else self.c.claim_spec(task)
        claimed = await self.c.store.complete_task(
            task.id, lease, outcome.result, agent_id=agent.agent_id, writes=writes,
            step=outcome.step, claim=spec)
        agent.committed(task.id, writes.messages)
        agent.spent(outcome.counts.tokens, outcome.counts.cost)
        if not claimed and spec is None:
            # nobody looked for the run's next work: maybe some is waiting unclaimed
            # (a claim that looked with room to spare and found none needs no second look)
            self.jobs.wake(task.run_id)
        return claimed

    def _completed(self, task: Task, claimed: list[Task]) -> Task | None:
        """Start what the completing transaction claimed: the first in this job (returned),
        the rest in jobs of their own."""
        if not claimed:
            return None
        self.start(task.run_id, claimed[1:])
        return claimed[0]

    async def _settle(self, task: Task, lease: Lease, outcome: Failed | Waiting | Limited
                      ) -> None:
        """A task that did not complete: failed, waiting for a human, or stopped by a cap."""
        bound = _task_log(task)
        self.jobs.wake(task.run_id)
        if isinstance(outcome, Failed):
            bound.warning("task failed", error=outcome.error)
            self.c.agent(task.run_id, task.role).spent(outcome.counts.tokens,
                                                       outcome.counts.cost)
            await self._fail(task, lease, outcome.error, retry=outcome.retry,
                             writes=Writes(messages=list(outcome.messages))
                             if outcome.messages else None)
        elif isinstance(outcome, Waiting):
            bound.info("task waiting for approval", approval=outcome.approval_id)
        else:
            bound.warning("usage cap reached", error=outcome.error)
            # first: the run's loop, woken above, must stop rather than claim the task anew
            # while the release below is in flight
            self.stop_error = outcome.error
            await self.c.store.release_leases(task.run_id, owners=[self.c.owner])

    async def _fail(self, task: Task, lease: Lease, error: str, *, retry: bool,
                    writes: Writes | None = None) -> None:
        # the task's own budget is enforced by the store; the role's ``max_attempts``
        # ("attempts per task") caps it too, or a role's declared limit would be ignored
        if task.retries + 1 >= type(self.c.pipeline.role(task.role)).max_attempts:
            retry = False
        agent = self.c.agent(task.run_id, task.role)
        try:
            await self.c.store.fail_task(task.id, lease, error,
                                         retry_at=self._retry_at(task) if retry else None,
                                         agent_id=agent.agent_id, writes=writes)
        except LeaseLostError:
            pass  # the run was cancelled or the task taken over meanwhile
        else:
            if writes is not None:
                agent.committed(task.id, writes.messages)
        finally:
            agent.task_done(task.id)

    async def heartbeat_loop(self, run_id: str) -> None:
        """Extend every lease this executor holds, and its claim to serve ``run_id``,
        every third of the lease time.

        One loop for all tasks (not one timer per task), its writes sent at once so
        they share one group commit: sent one by one behind a busy store's queue, a
        round of 32 leases took longer than the lease and live workers lost tasks. A
        lease found lost (the run was cancelled, or the lease expired and another
        worker took the task) cancels the task's job here so it stops writing.
        """
        seconds = self.c.settings.lease_seconds
        while True:
            await asyncio.sleep(seconds / 3)
            held = list(self.leases.items())
            renewals = await asyncio.gather(
                self.c.store.serve_run(run_id, self.c.owner, seconds),
                *(self.c.store.heartbeat(task_id, lease, seconds) for task_id, (_, lease)
                  in held), return_exceptions=True)
            for (task_id, _), ok in zip(held, renewals[1:], strict=True):
                if ok is False:
                    self.jobs.cancel(run_id, task_id)
            failed = [r for r in renewals if isinstance(r, BaseException)]
            if failed:  # a store too busy or cut off this round: the next round tries
                # again (a lease that lapsed meanwhile is fenced by its attempt); a loop
                # that died here would let every lease of this drive lapse for good
                log.warning("lease renewal failed; retrying", run=run_id,
                             error=str(failed[0]))
                if not isinstance(failed[0], Exception):
                    raise failed[0]
