"""The run-copying and retention half of ``SQLiteBlackboard``: fork, delete, prune.

Split from ``sqlite.py`` to keep each module to one job; the methods build the ops
(in ``fork`` / ``retention``) and send them through the store's writer.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
from collections.abc import Awaitable, Callable
from typing import TypeVar

from orchestra._types import JSON, Run
from orchestra.store.codec import Encoder
from orchestra.store.protocol import Pruned
from orchestra.store.pruning import prune
from orchestra.store.sqlite import fork as _fork
from orchestra.store.sqlite import retention as _retention
from orchestra.store.sqlite.txn import Conn, Txn

T = TypeVar("T")


class RunCopyMethods:
    """Mixed into ``SQLiteBlackboard``, which provides ``path``, ``_enc``, ``_submit``,
    ``_read`` and ``_busy_timeout``."""

    path: str
    _enc: Encoder
    _busy_timeout: float

    async def _write(self, op: Callable[[Txn], Awaitable[T]]) -> T:
        raise NotImplementedError

    async def _read(self, op: Callable[[Conn], Awaitable[T]]) -> T:
        raise NotImplementedError

    async def fork_run(self, run_id: str, at_seq: int, *, fork_id: str | None = None,
                       input: JSON = None) -> Run:
        """A new run whose board, tasks and agents' histories are as they were right after
        event ``at_seq`` of ``run_id`` (widened to the end of that event's write).

        Resuming the fork replays the steps finished by then from its journal and runs
        the rest anew. ``input`` (when not None) replaces the run's input, e.g. to
        record other models for the fork. The source run is not changed.
        """
        return await self._write(lambda tx: _fork.fork_run(tx, run_id, at_seq, fork_id,
                                                                 input))

    async def delete_run(self, run_id: str) -> None:
        """Delete a finished run and everything it owns; a live run must be cancelled first."""
        await self._write(lambda tx: _retention.delete_runs(tx, [run_id]))

    async def prune_runs(self, *, finished_before: float | None = None,
                         keep: int | None = None, vacuum: bool = False,
                         batch_rows: int = 20_000, fold: bool = True) -> Pruned:
        """Delete finished runs (updated before ``finished_before``, and beyond the ``keep``
        most recently finished) completely, each write at most about ``batch_rows`` rows.

        With ``fold``, the runs it keeps (every finished run, and with ``finished_before``
        every run untouched since then) have their completed calls' token deltas folded
        into their steps (``store/folding.py``: the step holds the whole answer; the text
        of an interrupted call stays until the run goes).

        Freed pages are reused by later writes; ``vacuum`` also returns them to the
        operating system (``incremental_vacuum`` on a store created with
        ``auto_vacuum=INCREMENTAL``, else ``VACUUM``, which rewrites the file).
        """
        runs, rows, folded = await prune(self._read, self._write, _retention,
                                         finished_before=finished_before, keep=keep,
                                         batch_rows=batch_rows, fold=fold)
        freed = await asyncio.to_thread(self._vacuum) if vacuum else 0
        return Pruned(runs=runs, rows=rows, freed_bytes=freed, folded=folded)

    def _vacuum(self) -> int:
        """On a worker thread, on a connection of its own: return free pages to the OS."""
        before = self._size()
        conn = sqlite3.connect(self.path, isolation_level=None, timeout=self._busy_timeout)
        try:
            if conn.execute("PRAGMA auto_vacuum").fetchone()[0] == 2:
                conn.execute("PRAGMA incremental_vacuum")
            else:
                conn.execute("VACUUM")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            conn.close()
        return max(0, before - self._size())

    def _size(self) -> int:
        """Bytes the store takes on disk: the file and its write-ahead log."""
        wal = self.path + "-wal"
        return os.path.getsize(self.path) + (os.path.getsize(wal) if os.path.exists(wal) else 0)
