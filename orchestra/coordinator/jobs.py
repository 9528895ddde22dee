"""The coordinator's running jobs, indexed for O(1) bookkeeping.

With hundreds of runs in one process, scanning every job on each wake-up made
scheduling quadratic; here each run has its own job table and wake-up event and
per-role counts are kept up to date as jobs start and end.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any


class Jobs:
    """Running task jobs by run, with per-role counts and per-run wake-ups."""

    def __init__(self) -> None:
        self._by_run: dict[str, dict[str, tuple[str, asyncio.Task[None]]]] = {}
        self._busy: dict[str, int] = {}
        self._wakes: dict[str, asyncio.Event] = {}
        self._refill: set[str] = set()
        self.total = 0

    def start(self, run_id: str, task_id: str, role: str,
              work: Coroutine[Any, Any, None]) -> None:
        job = asyncio.create_task(work, name=f"{run_id}:{task_id}:{role}")
        self._by_run.setdefault(run_id, {})[task_id] = (role, job)
        self._busy[role] = self._busy.get(role, 0) + 1
        self.total += 1
        job.add_done_callback(lambda _j: self._end(run_id, task_id))

    def _end(self, run_id: str, task_id: str) -> None:
        jobs = self._by_run.get(run_id)
        entry = jobs.pop(task_id, None) if jobs else None
        if entry is None:
            return
        self._busy[entry[0]] -= 1
        self.total -= 1
        if jobs is not None and not jobs:
            del self._by_run[run_id]
        self.wake(run_id, refill=False)  # the executor asked for a refill if one is needed

    def wake(self, run_id: str, *, refill: bool = True) -> None:
        """Wake the run's scheduling loop; ``refill``: it should look for new work."""
        if refill:
            self._refill.add(run_id)
        event = self._wakes.get(run_id)
        if event is not None:
            event.set()

    def take_refill(self, run_id: str) -> bool:
        """Whether the loop should claim (and clear the flag)."""
        if run_id in self._refill:
            self._refill.discard(run_id)
            return True
        return False

    async def wait(self, run_id: str, seconds: float) -> bool:
        """Sleep until woken or ``seconds`` pass; True if woken."""
        event = self._wakes.setdefault(run_id, asyncio.Event())
        if event.is_set():
            event.clear()
            return True
        try:
            await asyncio.wait_for(event.wait(), seconds)
        except TimeoutError:
            return False
        event.clear()
        return True

    def of_run(self, run_id: str) -> list[asyncio.Task[None]]:
        return [job for _, job in self._by_run.get(run_id, {}).values()]

    def has(self, run_id: str) -> bool:
        return bool(self._by_run.get(run_id))

    def cancel(self, run_id: str, task_id: str | None = None) -> None:
        for tid, (_, job) in list(self._by_run.get(run_id, {}).items()):
            if task_id is None or tid == task_id:
                job.cancel()

    def busy(self, role: str) -> int:
        return self._busy.get(role, 0)

    def forget(self, run_id: str) -> None:
        self._wakes.pop(run_id, None)
        self._refill.discard(run_id)
