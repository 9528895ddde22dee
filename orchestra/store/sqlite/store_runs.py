"""The runs half of ``SQLiteBlackboard`` that is SQLite's own: returning a pruned
file's free pages to the operating system. The rest is shared (``store/facade_runs.py``).
"""

from __future__ import annotations

import asyncio
import os
import sqlite3

from orchestra.store.facade_runs import RunFacade
from orchestra.store.sqlite.txn import Conn, Txn


class RunMethods(RunFacade[Txn, Conn]):
    """Mixed into ``SQLiteBlackboard``, which provides ``path`` and ``_busy_timeout``."""

    path: str
    _busy_timeout: float

    async def _vacuum(self) -> int:
        return await asyncio.to_thread(self._vacuum_file)

    def _vacuum_file(self) -> int:
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
