"""The runs half of ``PostgresBlackboard`` that is PostgreSQL's own: ``VACUUM`` after a
prune. The rest is shared (``store/facade_runs.py``).
"""

from __future__ import annotations

import asyncpg

from orchestra.store.facade_runs import RunFacade
from orchestra.store.postgres.txn import Txn


class RunMethods(RunFacade[Txn, asyncpg.Connection]):
    """Mixed into ``PostgresBlackboard``."""

    async def _vacuum(self) -> int:
        return await self._read(_vacuum)


async def _vacuum(c: asyncpg.Connection) -> int:
    """``VACUUM`` (outside any transaction); the bytes the database shrank by."""
    size = "SELECT pg_database_size(current_database())"
    before = await c.fetchval(size)
    await c.execute("VACUUM")
    return max(0, int(before) - int(await c.fetchval(size)))

