"""The queue and journal half of ``SQLiteBlackboard`` that is SQLite's own: claims, a
task's and a step's end, serving a run, each with its fast path (one row, or one
statement, when this process claimed the task). The rest is shared
(``store/facade_tasks.py``).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Collection, Sequence
from typing import TypeVar

from orchestra._types import JSON, StepKind, Task
from orchestra.store import rules
from orchestra.store.codec import Encoder
from orchestra.store.facade_tasks import TaskFacade
from orchestra.store.protocol import ClaimSpec, Lease, StepResult, Writes
from orchestra.store.sqlite import journal as _journal
from orchestra.store.sqlite import servers as _servers
from orchestra.store.sqlite import step as _step
from orchestra.store.sqlite import step_rows as _step_rows
from orchestra.store.sqlite import tasks as _tasks
from orchestra.store.sqlite import versions as _versions
from orchestra.store.sqlite.events import batched_events
from orchestra.store.sqlite.known import Known
from orchestra.store.sqlite.txn import Claimer, Conn, NeedsTransaction, Txn
from orchestra.store.sqlite.writer import Row, RowOf
from orchestra.store.versions import covers
from orchestra.store.versions import served as _served_list

T = TypeVar("T")


def _served(versions: Collection[str] | None) -> frozenset[str] | None:
    """The ``runs.version`` values a claim serving ``versions`` takes (None: any)."""
    values = _served_list(versions)
    return None if values is None else frozenset(values)


class TaskMethods(TaskFacade[Txn, Conn]):
    """Mixed into ``SQLiteBlackboard``, which provides ``_write`` and ``_read``."""

    _known: Known

    async def _write(self, op: Callable[[Txn], Awaitable[T]], *, one_statement: bool = False,
                     row: RowOf | None = None) -> T:
        raise NotImplementedError

    # -- tasks and leases -----------------------------------------------------
    async def claim_task(self, owner: str, *, run_id: str | None = None,
                         roles: Collection[str] | None = None, lease_seconds: float = 30.0,
                         versions: Collection[str] | None = None) -> Task | None:
        roles = None if roles is None else tuple(roles)
        served = None if versions is None else tuple(versions)
        task = await self._write(lambda tx: _tasks.claim(
            tx, owner, run_id=run_id, roles=roles, lease_seconds=lease_seconds,
            versions=served))
        if task is not None:
            self._known.claimed((task,), _served(served))
        return task

    async def claim_tasks(self, owner: str, *, capacity: dict[str, int], limit: int,
                          run_id: str | None = None, lease_seconds: float = 30.0,
                          versions: Collection[str] | None = None) -> list[Task]:
        """Claim up to ``limit`` ready tasks (at most ``capacity[role]`` of each role) in
        one transaction: a coordinator with free slots fills them in one round trip."""
        capacity = dict(capacity)
        served = None if versions is None else tuple(versions)
        if run_id is not None and owner and limit > 0:  # else the claim itself says why
            now = time.time()
            if not await self._read(lambda c: _tasks.claimable_in_run(c, run_id, now)):
                return []  # nothing to claim: found by a read, no write lock taken
        tasks = await self._write(lambda tx: _tasks.claim_many(
            tx, owner, run_id=run_id, capacity=capacity, limit=limit,
            lease_seconds=lease_seconds, versions=served))
        self._known.claimed(tasks, _served(served))
        return tasks

    async def complete_task(self, task_id: str, lease: Lease, result: JSON, *,
                            agent_id: str, writes: Writes | None = None,
                            step: StepResult | None = None,
                            claim: ClaimSpec | None = None) -> list[Task]:
        """Hand in the task, and with ``claim`` then ``claim_tasks`` in the same
        transaction: a busy worker hands in one result and takes its next work in a
        single round trip. The usual
        end (a model step, messages, handoffs) is one appended record (``step``): the
        write's one statement when this process knows the task (it claimed it)."""
        if claim is None:
            await self._write(lambda tx: _journal.complete_task(
                tx, task_id, lease, result, agent_id, writes, step))
            return []
        record = rules.fits(writes, step, task_id)
        known = self._known
        general = not record  # once the record declined, the general path (always right)

        async def op(tx: Txn) -> list[Task]:
            nonlocal general
            if not general:
                assert step is not None
                claimed = await _step.complete_and_claim(tx, known, task_id, lease, result,
                                                         agent_id, writes, step, claim)
                if claimed is not None:
                    return claimed
                general = True
                if not tx.conn.in_transaction:  # the general path: many statements
                    raise NeedsTransaction(f"task {task_id}'s end takes the general path")
            async with batched_events(tx):
                # the run's older pending tasks first; room left over takes the tasks this
                # one routes as they are inserted (see ``Claimer``)
                older = await _tasks.claim_many(tx, claim.owner, run_id=claim.run_id,
                                             capacity=dict(claim.capacity), limit=claim.limit,
                                             lease_seconds=claim.lease_seconds,
                                             announce=False, expired=False,
                                             versions=claim.versions)
                room = dict(claim.capacity)
                for task in older:
                    room[task.role] -= 1
                left = claim.limit - len(older)
                if claim.versions is not None and not covers(
                        frozenset((await _versions.task_run_version(tx, task_id) or "",)),
                        claim.versions):
                    left = 0  # the run is on code the claimer does not run: none of its tasks
                claimer = Claimer(claim.owner, room, left, claim.lease_seconds)
                with tx.claiming(claimer):
                    await _journal.complete_task(tx, task_id, lease, result, agent_id, writes,
                                               step)
                nxt = older + claimer.claimed
                await _tasks.announce_claims(tx, nxt, claim.owner)
            known.ended(task_id)
            known.claimed(nxt, _served(claim.versions))
            return nxt

        def row(enc: Encoder, now: float) -> Row | None:
            assert step is not None
            return _step.record_row(enc, now, known, task_id, lease, result, agent_id, writes,
                                    step, claim)

        return await self._write(op, one_statement=record, row=row if record else None)

    # -- who serves which run -------------------------------------------------
    async def serve_run(self, run_id: str, owner: str, lease_seconds: float) -> None:
        """``owner`` serves ``run_id`` for ``lease_seconds`` more (renew it as leases are
        heartbeated); ``lease_seconds=0`` says it stopped serving."""
        await self._write(lambda tx: _servers.renew(tx, run_id, owner, lease_seconds),
                          row=lambda enc, now: _servers.renew_row(run_id, owner, lease_seconds,
                                                                  now))

    async def claimable_runs(self, *, limit: int, exclude: Sequence[str] = (),
                             versions: Sequence[str] | None = None) -> list[str]:
        """Live runs with a task claimable now (see ``Blackboard.claimable_runs``)."""
        skip, now = tuple(exclude), time.time()
        if versions is not None:
            served = tuple(versions)
            return await self._read(lambda c: _versions.claimable_runs(c, now, limit, skip,
                                                                       served))
        return await self._read(lambda c: _servers.claimable_runs(c, now, limit, skip))


    # -- step journal ---------------------------------------------------------
    async def start_step(self, task_id: str, retry: int, step: int, kind: StepKind,
                         name: str, input_digest: str, lease: Lease) -> None:
        """One row (``step_rows``) when this process claimed the task, else the general way."""
        known = self._known
        await self._write(lambda tx: _journal.start_step(
            tx, task_id, retry, step, kind, name, input_digest, lease),
            row=lambda enc, now: _step_rows.start_row(enc, now, known, task_id, retry, step,
                                                      kind, name, input_digest, lease))

    async def complete_step(self, result: StepResult, lease: Lease, *, agent_id: str,
                            writes: Writes | None = None) -> None:
        """One row (``step_rows``) when the step writes nothing but its outcome and this
        process claimed the task, else the general way."""
        known = self._known
        await self._write(lambda tx: _journal.complete_step(tx, result, lease, agent_id,
                                                                  writes),
                          row=lambda enc, now: _step_rows.end_row(enc, now, known, result,
                                                                  lease, agent_id, writes))
