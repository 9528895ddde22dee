"""Opening a store of the blackboard tests by its spec (a SQLite path or a DSN)."""

from __future__ import annotations

from orchestra.store import Blackboard, SQLiteBlackboard


async def open_spec(spec: str) -> Blackboard:
    if spec.startswith("postgres"):
        from orchestra.store.postgres import PostgresBlackboard

        return await PostgresBlackboard.open(spec)
    return await SQLiteBlackboard.open(spec)
