"""The queue's and the journal's methods, written once (see ``facade``); claims, a
task's or a step's end and serving a run are each backend's own (``store_tasks``:
their fast paths differ)."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from orchestra._types import Step, Task
from orchestra.store.backend import C, X
from orchestra.store.facade import Facade
from orchestra.store.protocol import Lease, NewTask, Writes


class TaskFacade(Facade[X, C]):
    """Mixed into each backend's store class."""

    # -- tasks and leases -----------------------------------------------------
    async def add_tasks(self, run_id: str, tasks: Sequence[NewTask]) -> list[Task]:
        tasks = tuple(tasks)
        return await self._write(lambda tx: self._sql.runs.add_tasks(tx, run_id, tasks))

    async def get_task(self, task_id: str) -> Task:
        return await self._read(lambda c: self._sql.reads.get_task(c, task_id))

    async def list_tasks(self, run_id: str, *, status: str | None = None,
                         role: str | None = None) -> list[Task]:
        return await self._read(lambda c: self._sql.reads.list_tasks(c, run_id, status, role))

    async def task_counts(self, run_id: str) -> dict[str, int]:
        """Number of tasks of the run per status (statuses with none are absent)."""
        return await self._read(lambda c: self._sql.reads.task_counts(c, run_id))

    async def retry_failed_tasks(self, run_id: str) -> list[Task]:
        """Put a run's failed tasks back in the queue, each with a fresh journal retry."""
        return await self._write(lambda tx: self._sql.tasks.retry_failed(tx, run_id))

    async def heartbeat(self, task_id: str, lease: Lease, lease_seconds: float) -> bool:
        return await self._write(lambda tx: self._sql.tasks.heartbeat(tx, task_id, lease,
                                                                      lease_seconds))

    async def release_leases(self, run_id: str | None = None, *,
                             owners: Collection[str] = ()) -> list[Task]:
        owners = tuple(owners)
        return await self._write(lambda tx: self._sql.tasks.release_leases(
            tx, run_id=run_id, owners=owners))

    async def fail_task(self, task_id: str, lease: Lease, error: str, *,
                        retry_at: float | None = None, agent_id: str | None = None,
                        writes: Writes | None = None) -> Task:
        return await self._write(lambda tx: self._sql.journal.fail_task(
            tx, task_id, lease, error, retry_at, agent_id, writes))

    # -- who serves which run -------------------------------------------------
    async def served_until(self, run_ids: Sequence[str]) -> dict[str, float | None]:
        """Per run, until when some process was last known to serve it (its renewals and
        its task leases, on the store's clock); None if nobody ever did. A live run
        whose time is past has no live worker."""
        ids = tuple(run_ids)
        return await self._read(lambda c: self._sql.servers.alive_until(c, ids))

    async def live_versions(self) -> set[str]:
        """The versions of the live runs a live process serves now (its renewals or task
        leases): a run of a version outside them has no worker of its version holding
        any run, so none of its version to take it (``orchestra runs`` says so)."""
        return await self._read(self._sql.servers.live_versions)

    # -- step journal ---------------------------------------------------------
    async def get_steps(self, task_id: str, retry: int) -> list[Step]:
        return await self._read(lambda c: self._sql.reads.get_steps(c, task_id, retry))

    async def step_counts(self, run_id: str) -> dict[str, int]:
        """Journal totals of a run: steps ``completed``, ``failed``, ``cancelled`` and
        ``started`` (in flight, or left by a dead process); ``reissued``: executions
        started again because the process running them died or lost its lease (the sum
        of ``attempts - 1``); ``retried``: steps run again in a later retry of their
        task after an error."""
        return await self._read(lambda c: self._sql.reads.step_counts(c, run_id))
