"""What a serving process (``orchestra worker``, ``orchestra serve``) drives, and how it
tells the store it will continue the runs parked on a human.

Both serve the same runs the same way: a pending or running run, and a waiting run
once a decision made a task pending again. While parked, a waiting run is *held*: the
process renews its claim to serve it (``serve_run``), so ``orchestra approve`` can read
from the store whether a live worker will continue it or ``orchestra resume`` is needed.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from orchestra._types import Run
from orchestra.store.protocol import RunStore, TaskQueue


async def needs_driving(store: RunStore, run: Run) -> bool:
    """Whether a serving process should drive ``run`` now."""
    if run.status in ("pending", "running"):
        return True
    return run.status == "waiting" and (await store.task_counts(run.id)).get("pending", 0) > 0


def why_not_served(run: Run, db: str) -> str:
    """Why a worker asked to serve ``run`` alone cannot, and what to do instead."""
    if run.status == "waiting":
        return (f"run {run.id} waits for a human decision (see `orchestra board {run.id} "
                f"approvals {db}`); after `orchestra approve ID {db}` a running "
                "`orchestra worker` or `orchestra serve` continues it")
    if run.status == "paused":
        return (f"run {run.id} is paused by its token cap; continue it with `orchestra resume "
                f"{run.id} {db} --max-tokens N`")
    if run.status == "failed":
        return (f"run {run.id} failed; `orchestra resume {run.id} {db}` retries its failed "
                "tasks")
    return f"run {run.id} is {run.status}: there is nothing left to serve"


class ParkedRuns:
    """Keeps this process's claim on the waiting runs it will continue once decided."""

    def __init__(self, store: TaskQueue, owner: str, lease_seconds: float) -> None:
        self._store, self._owner, self._lease = store, owner, lease_seconds
        self._renewed: dict[str, float] = {}

    async def hold(self, runs: Iterable[Run]) -> None:
        """Renew the claim on each waiting run, once a third of a lease."""
        now = time.monotonic()
        waiting = {r.id for r in runs if r.status == "waiting"}
        self._renewed = {k: v for k, v in self._renewed.items() if k in waiting}
        for run_id in waiting:
            if now - self._renewed.get(run_id, -self._lease) >= self._lease / 3:
                await self._store.serve_run(run_id, self._owner, self._lease)
                self._renewed[run_id] = now


async def active_runs(store: RunStore, page: int = 1000) -> list[Run]:
    """Every active run, newest first, page by page: a worker serves them all, not only
    the newest ``list_runs`` page (with more active runs than a page, every worker would
    serve the same newest ones and the older ones would wait for them to finish)."""
    runs: list[Run] = []
    before: tuple[float, str] | None = None
    while len(batch := await store.list_runs(active_only=True, limit=page,
                                             before=before)) == page:
        runs += batch
        before = (batch[-1].created_at, batch[-1].id)
    return runs + batch


async def served_now(store: TaskQueue, run_id: str) -> bool:
    """Whether a live process serves (or holds) ``run_id`` right now."""
    until = (await store.served_until([run_id])).get(run_id)
    return until is not None and until >= time.time()
