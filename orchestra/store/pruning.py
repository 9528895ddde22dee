"""A prune's plan, the same on both backends: the finished runs that go are deleted whole
in bounded writes (a run larger than a write trimmed first), then the kept runs' completed
calls' token deltas are folded (``folding``). Each backend gives its reads, its writes and
its retention ops (``sqlite/retention.py``, ``postgres/retention.py``: the same names)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import Protocol, TypeVar

from orchestra.store.folding import chunks
from orchestra.store.rules import batches

T = TypeVar("T")
C = TypeVar("C")  # a backend's read connection
X = TypeVar("X")  # a backend's write transaction
C_co = TypeVar("C_co", covariant=True)
C_contra = TypeVar("C_contra", contravariant=True)
X_contra = TypeVar("X_contra", contravariant=True)


class Reads(Protocol[C_co]):
    """A backend's ``_read`` (or ``_write``): runs ``op`` on its connection (transaction)."""

    def __call__(self, op: Callable[[C_co], Awaitable[T]], /) -> Awaitable[T]: ...


class RetentionOps(Protocol[C_contra, X_contra]):
    """What a backend's ``retention`` module offers a prune (see SQLite's for each)."""

    def candidates(self, conn: C_contra, finished_before: float | None, keep: int | None,
                   ) -> Awaitable[list[tuple[str, int]]]: ...

    def delete_some(self, tx: X_contra, run_id: str, batch_rows: int) -> Awaitable[bool]: ...

    def delete_runs(self, tx: X_contra, run_ids: Sequence[str]) -> Awaitable[int]: ...

    def fold_candidates(self, conn: C_contra, finished_before: float | None,
                        ) -> Awaitable[list[str]]: ...

    def deltas_to_fold(self, conn: C_contra, run_id: str) -> Awaitable[list[int]]: ...

    def delete_events(self, tx: X_contra, run_id: str, seqs: Sequence[int]) -> Awaitable[int]: ...


async def prune(read: Reads[C], write: Reads[X], ops: RetentionOps[C, X], *,
                finished_before: float | None, keep: int | None, batch_rows: int,
                fold: bool) -> tuple[list[str], int, int]:
    """Prune as ``prune_runs`` says; returns (runs deleted, rows deleted, deltas folded)."""
    if batch_rows < 1:
        raise ValueError(f"batch_rows must be >= 1, got {batch_rows}")
    runs = await read(partial(ops.candidates, finished_before=finished_before, keep=keep))
    rows = 0
    for group in batches(runs, batch_rows):
        if len(group) == 1:  # possibly larger than a batch: trim it in bounded writes
            while await write(partial(ops.delete_some, run_id=group[0], batch_rows=batch_rows)):
                pass
        rows += await write(partial(ops.delete_runs, run_ids=group))
    folded = 0
    if fold:
        for run_id in await read(partial(ops.fold_candidates, finished_before=finished_before)):
            seqs = await read(partial(ops.deltas_to_fold, run_id=run_id))
            for part in chunks(seqs, batch_rows):
                folded += await write(partial(ops.delete_events, run_id=run_id, seqs=part))
    return [run_id for run_id, _ in runs], rows, folded
