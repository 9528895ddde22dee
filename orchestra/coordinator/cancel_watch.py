"""Noticing runs cancelled by another process: one read per poll for all driven runs.

``orchestra cancel`` from another process marks the run ``cancelled`` in the store; the
process driving it must stop its in-flight model and tool calls soon after. One
watcher reads the status of every run it watches in one read every ``poll`` seconds (a
server driving 200 runs made 400 reads a second, one per run). A serving process
(``orchestra worker``, ``orchestra serve``'s pool) makes one coordinator per run and
gives them all one watcher: with a watcher each, a worker made one read per run and
poll, so N workers on R runs made N x R reads per poll.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from orchestra._errors import StoreError
from orchestra._log import get_logger
from orchestra.store.protocol import RunStore

log = get_logger("orchestra.coordinator")


OnCancel = Callable[[str], None]


class CancelWatch:
    """Calls each watcher's ``on_cancel(run_id)`` for each watched run found cancelled."""

    def __init__(self, store: RunStore, poll: float) -> None:
        self.store, self.poll = store, poll
        self._runs: dict[str, list[OnCancel]] = {}
        self._task: asyncio.Task[None] | None = None

    def watch(self, run_id: str, on_cancel: OnCancel) -> None:
        """Start watching ``run_id`` for ``on_cancel`` (a drive began); the poller runs
        while any run is watched."""
        self._runs.setdefault(run_id, []).append(on_cancel)
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._poll(), name="orchestra cancel watch")

    def unwatch(self, run_id: str, on_cancel: OnCancel) -> None:
        """A drive of ``run_id`` ended."""
        callbacks = self._runs.get(run_id, [])
        if on_cancel in callbacks:
            callbacks.remove(on_cancel)
        if not callbacks:
            self._runs.pop(run_id, None)
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
                if statuses.get(run_id) != "cancelled":
                    continue
                for on_cancel in list(self._runs.get(run_id, ())):
                    try:
                        on_cancel(run_id)
                    except Exception:  # a bug there must not stop watching the others
                        log.exception("stopping a cancelled run failed", run=run_id)
