"""When the board ends a run: the pipeline's ``done`` predicate over the whole board.

Decided from what the store holds (no counter in memory), so a resumed run, or another
worker, decides the same.
"""

from __future__ import annotations

from orchestra.coordinator.pipeline import Pipeline
from orchestra.coordinator.subscriptions import EntryReads
from orchestra.subscriptions import BoardView


async def board_done(pipeline: Pipeline, store: EntryReads, run_id: str) -> bool:
    """Whether the pipeline's ``done(board)`` holds now (False without one)."""
    if pipeline.done is None:
        return False
    return bool(pipeline.done(BoardView(await store.get_entries(run_id), None)))
