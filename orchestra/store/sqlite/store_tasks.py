"""The queue and journal half of ``SQLiteBlackboard``: tasks, leases, serving, step journal.

Split from ``sqlite.py`` to keep each module to one job; the methods only build the
ops (in ``tasks`` / ``journal`` / ``reads`` / ``servers``) and send them
through the store's writer or reader.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Collection, Sequence
from typing import TypeVar

from orchestra._types import JSON, Run, Step, StepKind, Task
from orchestra.store import rules
from orchestra.store.codec import Encoder
from orchestra.store.protocol import ClaimSpec, Lease, NewTask, StepResult, Writes
from orchestra.store.sqlite import journal as _journal
from orchestra.store.sqlite import reads as _reads
from orchestra.store.sqlite import runs as _runs
from orchestra.store.sqlite import servers as _servers
from orchestra.store.sqlite import step as _step
from orchestra.store.sqlite import step_rows as _step_rows
from orchestra.store.sqlite import tasks as _tasks
from orchestra.store.sqlite import versions as _versions
from orchestra.store.sqlite.events import batched_events
from orchestra.store.sqlite.known import Known
from orchestra.store.sqlite.txn import Claimer, Conn, NeedsTransaction, Txn
from orchestra.store.sqlite.writer import Row, RowOf

T = TypeVar("T")


class TaskMethods:
    """Mixed into ``SQLiteBlackboard``, which provides ``_write`` and ``_read``."""

    _known: Known

    async def _write(self, op: Callable[[Txn], Awaitable[T]], *, one_statement: bool = False,
                     row: RowOf | None = None) -> T:
        raise NotImplementedError

    async def _read(self, op: Callable[[Conn], Awaitable[T]]) -> T:
        raise NotImplementedError

    # -- tasks and leases -----------------------------------------------------
    async def add_tasks(self, run_id: str, tasks: Sequence[NewTask]) -> list[Task]:
        tasks = tuple(tasks)
        return await self._write(lambda tx: _runs.add_tasks(tx, run_id, tasks))

    async def get_task(self, task_id: str) -> Task:
        return await self._read(lambda c: _reads.get_task(c, task_id))

    async def list_tasks(self, run_id: str, *, status: str | None = None,
                         role: str | None = None) -> list[Task]:
        return await self._read(lambda c: _reads.list_tasks(c, run_id, status, role))

    async def task_counts(self, run_id: str) -> dict[str, int]:
        """Number of tasks of the run per status (statuses with none are absent)."""
        return await self._read(lambda c: _reads.task_counts(c, run_id))

    async def claim_task(self, owner: str, *, run_id: str | None = None,
                         roles: Collection[str] | None = None,
                         lease_seconds: float = 30.0) -> Task | None:
        roles = None if roles is None else tuple(roles)
        task = await self._write(lambda tx: _tasks.claim(
            tx, owner, run_id=run_id, roles=roles, lease_seconds=lease_seconds))
        if task is not None:
            self._known.claimed((task,))
        return task

    async def claim_tasks(self, owner: str, *, capacity: dict[str, int], limit: int,
                          run_id: str | None = None,
                          lease_seconds: float = 30.0) -> list[Task]:
        """Claim up to ``limit`` ready tasks (at most ``capacity[role]`` of each role) in
        one transaction: a coordinator with free slots fills them in one round trip."""
        capacity = dict(capacity)
        if run_id is not None and owner and limit > 0:  # else the claim itself says why
            now = time.time()
            if not await self._read(lambda c: _tasks.claimable_in_run(c, run_id, now)):
                return []  # nothing to claim: found by a read, no write lock taken
        tasks = await self._write(lambda tx: _tasks.claim_many(
            tx, owner, run_id=run_id, capacity=capacity, limit=limit,
            lease_seconds=lease_seconds))
        self._known.claimed(tasks)
        return tasks

    async def retry_failed_tasks(self, run_id: str) -> list[Task]:
        """Put a run's failed tasks back in the queue, each with a fresh journal retry."""
        return await self._write(lambda tx: _tasks.retry_failed(tx, run_id))

    async def heartbeat(self, task_id: str, lease: Lease, lease_seconds: float) -> bool:
        return await self._write(lambda tx: _tasks.heartbeat(tx, task_id, lease,
                                                                  lease_seconds))

    async def release_leases(self, run_id: str | None = None, *,
                             owners: Collection[str] = ()) -> list[Task]:
        owners = tuple(owners)
        return await self._write(lambda tx: _tasks.release_leases(
            tx, run_id=run_id, owners=owners))

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
                                             announce=False, expired=False)
                room = dict(claim.capacity)
                for task in older:
                    room[task.role] -= 1
                claimer = Claimer(claim.owner, room, claim.limit - len(older),
                                            claim.lease_seconds)
                with tx.claiming(claimer):
                    await _journal.complete_task(tx, task_id, lease, result, agent_id, writes,
                                               step)
                nxt = older + claimer.claimed
                await _tasks.announce_claims(tx, nxt, claim.owner)
            known.ended(task_id)
            known.claimed(nxt)
            return nxt

        def row(enc: Encoder, now: float) -> Row | None:
            assert step is not None
            return _step.record_row(enc, now, known, task_id, lease, result, agent_id, writes,
                                    step, claim)

        return await self._write(op, one_statement=record, row=row if record else None)

    async def fail_task(self, task_id: str, lease: Lease, error: str, *,
                        retry_at: float | None = None, agent_id: str | None = None,
                        writes: Writes | None = None) -> Task:
        return await self._write(lambda tx: _journal.fail_task(
            tx, task_id, lease, error, retry_at, agent_id, writes))

    # -- who serves which run -------------------------------------------------
    async def serve_run(self, run_id: str, owner: str, lease_seconds: float) -> None:
        """``owner`` serves ``run_id`` for ``lease_seconds`` more (renew it as leases are
        heartbeated); ``lease_seconds=0`` says it stopped serving."""
        await self._write(lambda tx: _servers.renew(tx, run_id, owner, lease_seconds),
                          row=lambda enc, now: _servers.renew_row(run_id, owner, lease_seconds,
                                                                  now))

    async def served_until(self, run_ids: Sequence[str]) -> dict[str, float | None]:
        """Per run, until when some process was last known to serve it (its renewals and
        its task leases, on the store's clock); None if nobody ever did. A live run
        whose time is past has no live worker."""
        ids = tuple(run_ids)
        return await self._read(lambda c: _servers.alive_until(c, ids))

    async def claimable_runs(self, *, limit: int, exclude: Sequence[str] = (),
                             versions: Sequence[str] | None = None) -> list[str]:
        """Live runs with a task claimable now (see ``Blackboard.claimable_runs``)."""
        skip, now = tuple(exclude), time.time()
        if versions is not None:
            served = tuple(versions)
            return await self._read(lambda c: _versions.claimable_runs(c, now, limit, skip,
                                                                       served))
        return await self._read(lambda c: _servers.claimable_runs(c, now, limit, skip))

    async def move_version(self, run_id: str, old: str, new: str, data: JSON) -> Run:
        """Move a run to another version (see ``Blackboard.move_version``)."""
        return await self._write(lambda tx: _versions.move_version(tx, run_id, old, new, data))

    # -- step journal ---------------------------------------------------------
    async def get_steps(self, task_id: str, retry: int) -> list[Step]:
        return await self._read(lambda c: _reads.get_steps(c, task_id, retry))

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

    async def step_counts(self, run_id: str) -> dict[str, int]:
        """Journal totals of a run: steps ``completed``, ``failed``, ``cancelled`` and
        ``started`` (in flight, or left by a dead process); ``reissued``: executions
        started again because the process running them died or lost its lease (the sum
        of ``attempts - 1``); ``retried``: steps run again in a later retry of their
        task after an error."""
        return await self._read(lambda c: _reads.step_counts(c, run_id))

