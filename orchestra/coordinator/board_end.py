"""When the board ends a run: the pipeline's ``done`` predicate, or a stall
(``Pipeline.stall``): no entry for many task ends, or one entry posted again and again.

Decided in a pure function (:func:`decide_end`) over what the store holds, so a task's
end (before it claims more work) and the drive's loop (after it) decide the same, and a
resumed run or another worker decide the same again.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Protocol

from orchestra._entries import Consumption, Entry
from orchestra._errors import NotFoundError, UserError
from orchestra._types import LIVE_RUN_STATUSES, Run, RunStatus, Task
from orchestra.coordinator.pipeline import Pipeline
from orchestra.store.protocol import NewNote
from orchestra.subscriptions import BoardView


class EndReads(Protocol):
    async def get_entries(self, run_id: str, *, type: str | None = None,
                          after: int = 0) -> list[Entry]: ...
    async def list_tasks(self, run_id: str, *, status: str | None = None,
                         role: str | None = None) -> list[Task]: ...
    async def get_consumptions(self, run_id: str) -> list[Consumption]: ...


@dataclass(frozen=True, slots=True)
class BoardEnd:
    """How the board ends a run, and why (the run's error, and a note, when stalled)."""

    status: RunStatus
    """``completed``, ``stalled``, or ``waiting`` (for a person, ``Stall(wait=True)``)."""
    reason: str


def ends_since_last_entry(entries: Sequence[Entry], completed: Sequence[Task]) -> int:
    """How many tasks ended (completed) after the last entry was posted."""
    last = max((e.created_at for e in entries), default=0.0)
    return sum(1 for t in completed if t.updated_at > last)


def decide_end(pipeline: Pipeline, entries: Sequence[Entry], quiet_ends: int
               ) -> BoardEnd | None:
    """Whether the board ends the run: done, or stalled (``quiet_ends``: task ends in a row
    that posted no entry; ``entries`` in posting order, the latest last: an entry posted
    ``repeats`` times stalls the run as it is posted, and one posted since, by a person
    who resumes it, lets it go on)."""
    if pipeline.done is not None and pipeline.done(BoardView(entries, None)):
        return BoardEnd("completed", "the board is done")
    stall = pipeline.stall
    if stall is None:
        return None
    status: RunStatus = "waiting" if stall.wait else "stalled"
    if stall.repeats is not None and entries:  # the latest entry, posted once too often
        same = Counter((e.type, json.dumps(e.body, sort_keys=True)) for e in entries)
        kind, body = latest = entries[-1].type, json.dumps(entries[-1].body, sort_keys=True)
        times = same[latest]
        if times >= stall.repeats:
            return BoardEnd(status, f"stalled: the same {kind} entry was posted {times} "
                                    f"times ({body[:120]})")
    if stall.after is not None and quiet_ends >= stall.after:
        return BoardEnd(status, f"stalled: the last {quiet_ends} task ends posted no new "
                                "entry")
    return None


async def board_end(pipeline: Pipeline, store: EndReads, run_id: str) -> BoardEnd | None:
    """:func:`decide_end` over the run as the store holds it (no read without a
    ``done`` or a ``stall``)."""
    if pipeline.done is None and pipeline.stall is None:
        return None
    entries = await store.get_entries(run_id)
    quiet = 0
    if pipeline.stall is not None and pipeline.stall.after is not None:
        quiet = ends_since_last_entry(entries, await store.list_tasks(run_id,
                                                                       status="completed"))
    return decide_end(pipeline, entries, quiet)


class NotingStatus(Protocol):
    async def set_run_status_noting(self, run_id: str, status: RunStatus, note: NewNote, *,
                                    author: str, error: str | None = None,
                                    only_from: Collection[RunStatus] | None = None) -> Run: ...
    async def get_run(self, run_id: str) -> Run: ...


async def end_by_board(store: NotingStatus, run_id: str, end: BoardEnd,
                       transition: Callable[..., Awaitable[Run]],
                       unserve: Callable[[str], Awaitable[None]]) -> Run:
    """End the run as the board says: completed, or stalled (or waiting) with the reason
    as its error and as a note on its board, the note in the status change's transaction
    (a kill between them would post it twice: once before, once on the resume that
    decides again); and stop serving it, in one group commit."""
    if end.status == "completed":
        change = transition(run_id, end.status)
    else:
        change = _noting(store, run_id, end)
    run, _ = await asyncio.gather(change, unserve(run_id))
    return run


async def _noting(store: NotingStatus, run_id: str, end: BoardEnd) -> Run:
    """The stall's status and note, unless another process already ended the run (then
    neither, and the run as it is; as the coordinator's ``_transition`` does)."""
    try:
        return await store.set_run_status_noting(run_id, end.status,
                                                 NewNote(end.reason, ("stalled",)),
                                                 author="orchestra", error=end.reason,
                                                 only_from=LIVE_RUN_STATUSES)
    except NotFoundError:
        raise
    except UserError:
        return await store.get_run(run_id)
