"""The run-copying and retention half of ``PostgresBlackboard``: fork, delete, prune.

Split from ``store.py`` to keep each module to one job; the methods build the ops
(in ``fork`` / ``retention``) and send them through the store's transactions.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial
from typing import TypeVar

import asyncpg

from orchestra._types import JSON, Run
from orchestra.store.codec import Encoder
from orchestra.store.folding import chunks
from orchestra.store.postgres import fork as _fork
from orchestra.store.postgres import retention as _retention
from orchestra.store.postgres.txn import Txn
from orchestra.store.protocol import Pruned
from orchestra.store.rules import batches

T = TypeVar("T")


class RunCopyMethods:
    """Mixed into ``PostgresBlackboard``, which provides ``_enc``, ``_submit`` and ``_read``."""

    _enc: Encoder

    async def _submit(self, op: Callable[[Txn], Awaitable[T]]) -> T:
        raise NotImplementedError

    async def _read(self, op: Callable[[asyncpg.Connection], Awaitable[T]]) -> T:
        raise NotImplementedError

    async def fork_run(self, run_id: str, at_seq: int, *, fork_id: str | None = None,
                       input: JSON = None) -> Run:
        """A new run holding ``run_id``'s state right after event ``at_seq`` (see SQLite's)."""
        return await self._submit(lambda tx: _fork.fork_run(tx, run_id, at_seq, fork_id, input))

    async def delete_run(self, run_id: str) -> None:
        """Delete a finished run and everything it owns; a live run must be cancelled first."""
        await self._submit(lambda tx: _retention.delete_runs(tx, [run_id]))

    async def prune_runs(self, *, finished_before: float | None = None,
                         keep: int | None = None, vacuum: bool = False,
                         batch_rows: int = 20_000, fold: bool = True) -> Pruned:
        """Delete finished runs completely, each transaction about ``batch_rows`` rows at
        most, and (``fold``) fold the kept runs' completed calls' token deltas (see SQLite's);
        ``vacuum`` then runs ``VACUUM`` (space is reused; the size change is reported)."""
        if batch_rows < 1:
            raise ValueError(f"batch_rows must be >= 1, got {batch_rows}")
        runs = await self._read(lambda c: _retention.candidates(c, finished_before, keep))
        rows = 0
        for group in batches(runs, batch_rows):
            if len(group) == 1:  # possibly larger than a batch: trim it in bounded writes
                while await self._submit(partial(_retention.delete_some, run_id=group[0],
                                                 batch_rows=batch_rows)):
                    pass
            rows += await self._submit(partial(_retention.delete_runs, run_ids=group))
        folded = await self._fold(finished_before, batch_rows) if fold else 0
        freed = await self._read(_vacuum) if vacuum else 0
        return Pruned(runs=[run_id for run_id, _ in runs], rows=rows, freed_bytes=freed,
                      folded=folded)

    async def _fold(self, finished_before: float | None, batch_rows: int) -> int:
        """Fold the token deltas of the runs a prune keeps; returns the events deleted."""
        folded = 0
        for run_id in await self._read(partial(_retention.fold_candidates,
                                               finished_before=finished_before)):
            seqs = await self._read(partial(_retention.deltas_to_fold, run_id=run_id))
            for part in chunks(seqs, batch_rows):
                folded += await self._submit(partial(_retention.delete_events, run_id=run_id,
                                                   seqs=part))
        return folded


async def _vacuum(c: asyncpg.Connection) -> int:
    """``VACUUM`` (outside any transaction); the bytes the database shrank by."""
    size = "SELECT pg_database_size(current_database())"
    before = await c.fetchval(size)
    await c.execute("VACUUM")
    return max(0, int(before) - int(await c.fetchval(size)))

