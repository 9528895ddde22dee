"""A model call's answer, as it is written, on the run's event log.

A :class:`DeltaWriter` is the :class:`~orchestra.models.base.DeltaSink` of one model
call. It buffers what the model writes and appends it as ``model.delta`` events in
small batches (the first piece at once, then every ``every`` seconds, or at once past
``chars`` characters), one append in flight at a time, so the events keep the order
of the text and a slow store makes batches larger, never the stream slower. The
appends go through the store's own writer (queued with everything else, sharing its
commits), in the run's one ``seq`` order: every reader that resumes from a seq
resumes mid-answer too.

Each event carries where it belongs (task, agent, role, step, retry, attempt: the
task's claim) and ``text`` and/or ``calls`` (``[[index, tool, argument text]]``).
The first event of a call says ``first``; when the adapter tries the call again,
``try`` counts the tries and the next event is a ``first`` again. A call re-issued
after its process died says ``reissue`` on its first event: the text of the attempt
before it stops there, interrupted. The deltas are for people watching: the journal
records the whole answer once, usage is counted from it alone, and a replayed step
writes none; a prune folds a completed call's deltas into its step (``store.folding``).
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass
from typing import Protocol, cast

from orchestra._log import get_logger
from orchestra._types import DELTA_EVENT, JSON, Event, Step, Task
from orchestra.models.base import Model, ModelRequest, ModelResponse, StreamingModel

log = get_logger("orchestra.runtime")


class EventAppender(Protocol):
    """The one store method a delta writer uses."""

    async def append_event(self, run_id: str, kind: str, data: JSON) -> Event: ...


@dataclass(frozen=True, slots=True)
class DeltaPace:
    """How often a streaming call's text reaches the event log."""

    every: float = 0.2
    """Seconds a piece waits for more before it is written (at most 1/every writes a
    second per streaming call)."""
    chars: int = 512
    """Characters after which the batch is written at once."""


STREAMED = DeltaPace()
"""The default pace."""


class DeltaWriter:
    """One model call's :class:`~orchestra.models.base.DeltaSink` (see the module doc).

    ``close()`` writes what is left and waits for it: the call's last delta is in the
    log before its step completes."""

    def __init__(self, log_: EventAppender, run_id: str, head: dict[str, JSON],
                 pace: DeltaPace = STREAMED, *, reissue: bool = False) -> None:
        self._log, self._run_id, self._head, self._pace = log_, run_id, head, pace
        self._reissue = reissue
        self._text: list[str] = []
        self._args: dict[int, list[str]] = {}
        self._names: dict[int, str] = {}
        self._chars = 0
        self._try = 1
        self._first = True
        self._ready: deque[dict[str, JSON]] = deque()
        self._timer: asyncio.TimerHandle | None = None
        self._task: asyncio.Task[None] | None = None
        self._closing = False
        self._broken = False
        self.appended = 0
        """Events written so far."""

    # -- DeltaSink -------------------------------------------------------------
    def text(self, delta: str) -> None:
        if delta:
            self._text.append(delta)
            self._grow(len(delta))

    def arguments(self, index: int, name: str, delta: str) -> None:
        if name:
            self._names[index] = name
        if delta:
            self._args.setdefault(index, []).append(delta)
            self._grow(len(delta))

    def retry(self) -> None:
        payload = self._take()
        if payload is not None:
            self._ready.append(payload)
            self._kick()
        self._try += 1
        self._first = True

    # -- writing ---------------------------------------------------------------
    async def close(self) -> None:
        """Write what is buffered and wait until every batch is in the log."""
        self._closing = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        while self._task is not None or self._ready or self._chars:
            if self._task is None:
                self._task = asyncio.ensure_future(self._drain())
            await self._task

    def _grow(self, n: int) -> None:
        self._chars += n
        if self._chars >= self._pace.chars or self._first:  # a call's first piece at once:
            self._kick()  # a reader sees it begin as soon as the store has it
        elif self._timer is None and self._task is None and not self._closing:
            self._timer = asyncio.get_running_loop().call_later(self._pace.every, self._kick)

    def _kick(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._task is None and not self._closing:  # else the running drain takes it
            self._task = asyncio.ensure_future(self._drain())

    async def _drain(self) -> None:
        try:
            while True:
                payload = self._ready.popleft() if self._ready else self._take()
                if payload is None:
                    return
                await self._append(payload)
                if not self._closing and not self._ready and self._chars < self._pace.chars:
                    return  # the rest waits for the timer: a few writes a second at most
        finally:
            self._task = None
            if self._chars and not self._closing and self._timer is None:
                self._timer = asyncio.get_running_loop().call_later(self._pace.every,
                                                                    self._kick)

    def _take(self) -> dict[str, JSON] | None:
        """The buffered pieces as one event's data (None when nothing is buffered)."""
        if not self._chars:
            return None
        data: dict[str, JSON] = dict(self._head)
        if self._try > 1:
            data["try"] = self._try
        if self._first:
            data["first"] = True
            if self._reissue:
                data["reissue"] = True
            self._first = False
        if self._text:
            data["text"] = "".join(self._text)
            self._text = []
        if self._args:
            data["calls"] = [[i, self._names.get(i, ""), "".join(parts)]
                             for i, parts in sorted(self._args.items())]
            self._args = {}
        self._chars = 0
        return data

    async def _append(self, data: dict[str, JSON]) -> None:
        if self._broken:
            return
        try:
            await self._log.append_event(self._run_id, DELTA_EVENT, data)
            self.appended += 1
        except Exception as exc:  # watching is best effort: the call goes on regardless
            self._broken = True
            log.warning("model deltas not written", run=self._run_id,
                        task=self._head.get("task"), error=str(exc))


def delta_writer(log_: EventAppender, task: Task, agent_id: str, step: int,
                 recorded: Step | None, pace: DeltaPace) -> DeltaWriter:
    """The writer of model step ``step`` of ``task``; ``recorded``: the step's journal
    row, if any (not completed, or it would replay: it was in flight when its process
    died). A retry's first step has no row while in flight (its claim journals it): any
    claim of the retry after the one that began it (``Task.retry_attempt``) re-issues
    it too, on the task's first go and on each retry alike."""
    return DeltaWriter(log_, task.run_id, {
        "task": task.id, "agent": agent_id, "role": task.role, "step": step,
        "retry": task.retries, "attempt": task.attempt}, pace,
        reissue=recorded is not None or (step == 1 and task.attempt > task.retry_attempt))


async def ask(model: Model, request: ModelRequest, writer: DeltaWriter | None) -> ModelResponse:
    """The model's reply; with a ``writer``, its pieces reach the log meanwhile, the
    last of them before this returns."""
    if writer is None:
        return await model.request(request)
    try:
        # the journal makes a writer only for a StreamingModel (checked once per task)
        return await cast(StreamingModel, model).request_stream(request, writer)
    finally:
        await writer.close()
