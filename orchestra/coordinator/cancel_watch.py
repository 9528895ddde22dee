"""Noticing runs cancelled by another process: one read per poll for all driven runs.

``orchestra cancel`` from another process marks the run ``cancelled`` in the store; the
process driving it must stop its in-flight model and tool calls soon after. One
watcher per coordinator reads the status of every run it drives in one read every
``poll`` seconds (a server driving 200 runs made 400 reads a second, one per run).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable

from orchestra._errors import StoreError
from orchestra._log import get_logger
from orchestra.store.protocol import Blackboard

log = get_logger("orchestra.coordinator")


class CancelWatch:
    """Calls ``on_cancel(run_id)`` once for each watched run found cancelled."""

    def __init__(self, store: Blackboard, poll: float,
                 on_cancel: Callable[[str], None]) -> None:
        self.store, self.poll, self.on_cancel = store, poll, on_cancel
        self._runs: Counter[str] = Counter()
        self._task: asyncio.Task[None] | None = None

    def watch(self, run_id: str) -> None:
        """Start watching ``run_id`` (a drive began); the poller runs while any is watched."""
        self._runs[run_id] += 1
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._poll(), name="orchestra cancel watch")

    def unwatch(self, run_id: str) -> None:
        """A drive of ``run_id`` ended."""
        self._runs[run_id] -= 1
        if self._runs[run_id] <= 0:
            del self._runs[run_id]
        if not self._runs and self._task is not None:
            self._task.cancel()
            self._task = None

    async def _poll(self) -> None:
        while self._runs:
            await asyncio.sleep(self.poll)
            runs = list(self._runs)
            try:
                statuses = await self.store.run_statuses(runs)
            except StoreError as exc:  # the drives meet the broken store themselves
                log.warning("cancel watch could not read run statuses", error=str(exc))
                continue
            for run_id in runs:
                if statuses.get(run_id) == "cancelled" and run_id in self._runs:
                    try:
                        self.on_cancel(run_id)
                    except Exception:  # a bug there must not stop watching the others
                        log.exception("stopping a cancelled run failed", run=run_id)
