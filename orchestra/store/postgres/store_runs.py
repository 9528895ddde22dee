"""The run-copying and retention half of ``PostgresBlackboard``: fork, delete, prune.

Split from ``store.py`` to keep each module to one job; the methods build the ops
(in ``fork`` / ``retention``) and send them through the store's transactions.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import asyncpg

from orchestra._types import JSON, Run
from orchestra.store.codec import Encoder
from orchestra.store.postgres import fork as _fork
from orchestra.store.postgres import retention as _retention
from orchestra.store.postgres.txn import Txn
from orchestra.store.protocol import Pruned
from orchestra.store.pruning import prune

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
        runs, rows, folded = await prune(self._read, self._submit, _retention,
                                         finished_before=finished_before, keep=keep,
                                         batch_rows=batch_rows, fold=fold)
        freed = await self._read(_vacuum) if vacuum else 0
        return Pruned(runs=runs, rows=rows, freed_bytes=freed, folded=folded)


async def _vacuum(c: asyncpg.Connection) -> int:
    """``VACUUM`` (outside any transaction); the bytes the database shrank by."""
    size = "SELECT pg_database_size(current_database())"
    before = await c.fetchval(size)
    await c.execute("VACUUM")
    return max(0, int(before) - int(await c.fetchval(size)))

