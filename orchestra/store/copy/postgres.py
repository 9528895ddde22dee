"""The PostgreSQL end of ``orchestra copy``: a run read in one repeatable-read snapshot,
written in one transaction (with what PostgreSQL keeps beside the rows: each agent's
message counter; task and approval positions come from insertion order)."""

from __future__ import annotations

from collections.abc import Callable

import asyncpg

from orchestra._errors import StoreError
from orchestra.store.copy.tables import HAS_RUN, LIVE_UNTIL, READS, RUN_IDS, RunRows, insert
from orchestra.store.postgres.dsn import options, redact, scrub

_NOW = "SELECT extract(epoch FROM now())::float8"
_AGENT_COUNTERS = """
UPDATE agents SET last_seq = COALESCE(
    (SELECT max(m.seq) FROM messages m WHERE m.agent_id = agents.id), 0)
WHERE run_id = $1"""


def _sql(text: str) -> str:
    return text.format(position="position", result="result")


class PostgresSide:
    def __init__(self, dsn: str, conn: asyncpg.Connection) -> None:
        self.where = redact(dsn)
        self._dsn = dsn
        self._conn = conn

    @classmethod
    async def connect(cls, dsn: str) -> PostgresSide:
        try:
            opts = options(dsn)  # behind a transaction pooler: no named statements
            return cls(dsn, await asyncpg.connect(
                opts.dsn, statement_cache_size=opts.statement_cache_size))
        except (asyncpg.PostgresError, OSError, ValueError) as exc:
            raise StoreError(f"{redact(dsn)}: cannot connect to PostgreSQL: "
                             f"{scrub(str(exc), dsn)}") from None

    def _error(self, what: str, exc: Exception) -> StoreError:
        return StoreError(f"{self.where}: {what} failed ({scrub(str(exc), self._dsn)})")

    async def run_ids(self) -> list[str]:
        return [r[0] for r in await self._conn.fetch(RUN_IDS)]

    async def has_run(self, run_id: str) -> bool:
        return await self._conn.fetchval(HAS_RUN, run_id) is not None

    async def read(self, run_id: str) -> tuple[RunRows, float | None, float]:
        try:
            async with self._conn.transaction(isolation="repeatable_read", readonly=True):
                tables = {table: [tuple(r) for r in await self._conn.fetch(_sql(sql), run_id)]
                          for table, sql in READS.items()}
                live_until = await self._conn.fetchval(LIVE_UNTIL, run_id)
                now = await self._conn.fetchval(_NOW)
        except asyncpg.PostgresError as exc:
            raise self._error(f"reading run {run_id}", exc) from None
        return RunRows(run_id, tables), live_until, now

    async def write(self, rows: RunRows,
                    fix_events: Callable[[RunRows, dict[int, int]], None]) -> bool:
        c = self._conn
        try:
            async with c.transaction():
                if await c.fetchval(HAS_RUN, rows.run_id) is not None:
                    return False
                new_ids: dict[int, int] = {}
                for table, data in rows.tables.items():
                    if table == "notes":
                        for old, *note in data:
                            new_ids[old] = await c.fetchval(insert(table), *note)
                        fix_events(rows, new_ids)
                    elif data:
                        await c.executemany(insert(table), data)
                await c.execute(_AGENT_COUNTERS, rows.run_id)
                return True
        except asyncpg.PostgresError as exc:
            raise self._error(f"copying run {rows.run_id} (nothing of it was written)",
                              exc) from None

    async def close(self) -> None:
        await self._conn.close()
