"""The queue and journal half of ``PostgresBlackboard`` that is PostgreSQL's own:
claims, a task's and a step's end, serving a run, each with its fast path (one
statement, a PL/pgSQL function's call, where it can). The rest is shared
(``store/facade_tasks.py``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Sequence
from typing import TypeVar

import asyncpg

from orchestra._types import JSON, StepKind, Task
from orchestra.store import rules
from orchestra.store.codec import Encoder
from orchestra.store.facade_tasks import TaskFacade
from orchestra.store.postgres import journal as _journal
from orchestra.store.postgres import servers as _servers
from orchestra.store.postgres import step as _step
from orchestra.store.postgres import tasks as _tasks
from orchestra.store.postgres import versions as _versions
from orchestra.store.postgres.txn import Txn
from orchestra.store.protocol import ClaimSpec, Lease, StepResult, Writes

T = TypeVar("T")


class TaskMethods(TaskFacade[Txn, asyncpg.Connection]):
    """Mixed into ``PostgresBlackboard``, which provides ``_enc``, ``_write``, ``_read`` and
    ``_statement``."""

    _enc: Encoder

    async def _statement(self, op: Callable[[asyncpg.Connection], Awaitable[T]]) -> T:
        """Run a write that is one statement (its own transaction): one round trip."""
        raise NotImplementedError

    # -- tasks and leases -----------------------------------------------------
    async def claim_task(self, owner: str, *, run_id: str | None = None,
                         roles: Collection[str] | None = None, lease_seconds: float = 30.0,
                         versions: Collection[str] | None = None) -> Task | None:
        roles = None if roles is None else tuple(roles)
        served = None if versions is None else tuple(versions)
        tasks = await self._write(lambda tx: _tasks.claim(
            tx, owner, run_id=run_id, roles=roles, lease_seconds=lease_seconds,
            versions=served))
        return tasks[0] if tasks else None

    async def claim_tasks(self, owner: str, *, capacity: dict[str, int], limit: int,
                          run_id: str | None = None, lease_seconds: float = 30.0,
                          versions: Collection[str] | None = None) -> list[Task]:
        capacity = dict(capacity)
        served = None if versions is None else tuple(versions)
        return await self._statement(lambda c: _tasks.claim_many_at_once(
            c, owner, run_id=run_id, capacity=capacity, limit=limit,
            lease_seconds=lease_seconds, versions=served))

    async def complete_task(self, task_id: str, lease: Lease, result: JSON, *,
                            agent_id: str, writes: Writes | None = None,
                            step: StepResult | None = None,
                            claim: ClaimSpec | None = None) -> list[Task]:
        """Hand in the task, and with ``claim`` then ``claim_tasks``, in one transaction
        (one round trip's worth of locking): the tasks this one routes are newer, so
        oldest-first still holds. The usual end (``rules.fits``) is one statement: one
        round trip."""
        enc = self._enc
        if claim is None:
            if step is not None and rules.fits(writes, step, task_id):
                await self._statement(lambda c: _step.end_step(
                    c, enc, step, lease, agent_id, writes, finish=result, done=True))
            else:
                await self._write(lambda tx: _journal.complete_task(
                    tx, task_id, lease, result, agent_id, writes, step))
            return []
        if step is not None and rules.fits(writes, step, task_id):
            rows = await self._statement(lambda c: _step.end_step(
                c, enc, step, lease, agent_id, writes, finish=result, claim=claim, done=True))
            return rows[1:]

        async def op(tx: Txn) -> list[Task]:
            await _journal.complete_task(tx, task_id, lease, result, agent_id, writes, step)
            nxt = await _tasks.claim_many(tx, claim.owner, run_id=claim.run_id,
                                          capacity=dict(claim.capacity), limit=claim.limit,
                                          lease_seconds=claim.lease_seconds, expired=False,
                                          versions=claim.versions)
            return nxt

        return await self._write(op)

    async def start_step(self, task_id: str, retry: int, step: int, kind: StepKind,
                         name: str, input_digest: str, lease: Lease) -> None:
        rules.check_kind(kind)
        await self._statement(lambda c: _step.start_step(c, task_id, retry, step, kind, name,
                                                         input_digest, lease))

    async def complete_step(self, result: StepResult, lease: Lease, *, agent_id: str,
                            writes: Writes | None = None) -> None:
        enc = self._enc
        if rules.fits(writes, result, result.task_id):
            await self._statement(lambda c: _step.end_step(c, enc, result, lease, agent_id,
                                                           writes))
            return
        await self._write(lambda tx: _journal.complete_step(tx, result, lease, agent_id,
                                                            writes))

    async def serve_run(self, run_id: str, owner: str, lease_seconds: float) -> None:
        await self._statement(lambda c: _servers.renew(c, run_id, owner, lease_seconds))

    async def claimable_runs(self, *, limit: int, exclude: Sequence[str] = (),
                             versions: Sequence[str] | None = None) -> list[str]:
        skip = tuple(exclude)
        if versions is not None:
            served = tuple(versions)
            return await self._read(lambda c: _versions.claimable_runs(c, limit, skip, served))
        return await self._read(lambda c: _servers.claimable_runs(c, limit, skip))
