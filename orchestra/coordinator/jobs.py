"""The coordinator's running jobs, indexed for O(1) bookkeeping.

With hundreds of runs in one process, scanning every job on each wake-up made
scheduling quadratic; here each run has its own job table and wake-up event and
per-role counts are kept up to date as jobs start and end.

A job may run several tasks of its run one after another (the next one claimed as the
last completed): :meth:`Jobs.hand_over` moves the job to its next task, so per-role
counts, cancellation by task id and the heartbeat all follow the task it runs now.

This is all of a coordinator's bookkeeping: what runs (jobs by run and role), which run
loops to wake and whether to claim when they wake (wakes, refills), which runs were
cancelled here, and how many slots a claim may fill.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Mapping
from typing import Any


class _Job:
    """One asyncio task and the orchestra task it runs now."""

    __slots__ = ("job", "role", "run_id", "task_id")

    def __init__(self, run_id: str, task_id: str, role: str, job: asyncio.Task[None]) -> None:
        self.run_id, self.task_id, self.role, self.job = run_id, task_id, role, job


class Jobs:
    """Running task jobs by run, with per-role counts, per-run wake-ups and refill flags,
    and the runs cancelled here."""

    def __init__(self) -> None:
        self._by_run: dict[str, dict[str, _Job]] = {}
        self._busy: dict[str, int] = {}
        self._wakes: dict[str, asyncio.Event] = {}
        self._refill: set[str] = set()
        self._moved: set[str] = set()  # runs a job of which ended or moved on since a wait
        self._cancelled: set[str] = set()
        self.total = 0

    def start(self, run_id: str, task_id: str, role: str,
              work: Coroutine[Any, Any, None]) -> None:
        job = asyncio.create_task(work, name=f"{run_id}:{task_id}:{role}")
        entry = _Job(run_id, task_id, role, job)
        self._by_run.setdefault(run_id, {})[task_id] = entry
        self._busy[role] = self._busy.get(role, 0) + 1
        self.total += 1
        job.add_done_callback(lambda _j: self._end(entry))

    def hand_over(self, run_id: str, task_id: str, next_id: str, next_role: str) -> None:
        """The job running ``task_id`` runs ``next_id`` (of ``next_role``) now."""
        jobs = self._by_run[run_id]
        entry = jobs.pop(task_id)
        self._busy[entry.role] -= 1
        self._busy[next_role] = self._busy.get(next_role, 0) + 1
        entry.task_id, entry.role = next_id, next_role
        jobs[next_id] = entry
        if run_id in self._wakes:  # the run's loop is serving it
            self._moved.add(run_id)
        entry.job.set_name(f"{run_id}:{next_id}:{next_role}")

    def _end(self, entry: _Job) -> None:
        jobs = self._by_run.get(entry.run_id)
        if jobs is None or jobs.get(entry.task_id) is not entry:
            return
        del jobs[entry.task_id]
        self._busy[entry.role] -= 1
        self.total -= 1
        if entry.run_id in self._wakes:
            self._moved.add(entry.run_id)
        if not jobs:
            del self._by_run[entry.run_id]
            # the run's loop, idle while jobs run, decides whether the run is done; with
            # jobs left it need not wake (the executor asks for a refill when one is needed)
            self.wake(entry.run_id, refill=False)

    def wake(self, run_id: str, *, refill: bool = True) -> None:
        """Wake the run's scheduling loop; ``refill``: it should look for new work."""
        if refill:
            self._refill.add(run_id)
        event = self._wakes.get(run_id)
        if event is not None:
            event.set()

    def ask_refill(self, run_id: str) -> None:
        """The loop's next wake-up should look for new work (without waking it now: a
        loop whose poll timed out looks at once; setting its event too made it look a
        second time straight after, doubling an idle run's claims and counts)."""
        self._refill.add(run_id)

    def take_refill(self, run_id: str) -> bool:
        """Whether the loop should claim (and clear the flag)."""
        if run_id in self._refill:
            self._refill.discard(run_id)
            return True
        return False

    async def wait(self, run_id: str, seconds: float) -> bool:
        """Sleep until woken or ``seconds`` pass; True if woken, or if the run's jobs
        moved on meanwhile (a run whose work flows needs no poll for more)."""
        event = self._wakes.setdefault(run_id, asyncio.Event())
        self._moved.discard(run_id)
        if event.is_set():
            event.clear()
            return True
        try:
            async with asyncio.timeout(seconds):  # no task per wait, unlike wait_for
                await event.wait()
        except TimeoutError:
            return run_id in self._moved
        event.clear()
        return True

    def of_run(self, run_id: str) -> list[asyncio.Task[None]]:
        return [e.job for e in self._by_run.get(run_id, {}).values()]

    def has(self, run_id: str) -> bool:
        return bool(self._by_run.get(run_id))

    def cancel(self, run_id: str, task_id: str | None = None) -> None:
        for tid, entry in list(self._by_run.get(run_id, {}).items()):
            if task_id is None or tid == task_id:
                entry.job.cancel()

    def busy(self, role: str) -> int:
        return self._busy.get(role, 0)

    def forget(self, run_id: str) -> None:
        self._wakes.pop(run_id, None)
        self._refill.discard(run_id)
        self._moved.discard(run_id)

    def stop_run(self, run_id: str) -> None:
        """``run_id`` was cancelled: cancel its jobs, wake its loop, and claim no more for it."""
        self._cancelled.add(run_id)
        self.cancel(run_id)
        self.wake(run_id)

    def stopped(self, run_id: str) -> bool:
        """Whether ``run_id`` was cancelled (here or, as noticed, elsewhere)."""
        return run_id in self._cancelled

    def free_slots(self, role_limits: Mapping[str, int], concurrency: int,
                   finishing: str | None = None) -> tuple[dict[str, int], int]:
        """Free slots per role and in total, given each role's limit and the total one
        (``finishing``: the role of a task about to end, whose slot counts as free)."""
        capacity = {role: limit - self.busy(role) + (1 if role == finishing else 0)
                    for role, limit in role_limits.items()}
        free = concurrency - self.total + (1 if finishing else 0)
        return capacity, free
