"""Model deltas on PostgreSQL: the same events, in the run's one seq order, as on SQLite."""

from __future__ import annotations

from orchestra.store.postgres.store import PostgresBlackboard
from tests.runtime.test_deltas import check_streamed_run


async def test_a_streaming_model_writes_its_answer_as_deltas(dsn: str) -> None:
    store = await PostgresBlackboard.open(dsn)
    try:
        await check_streamed_run(store)
    finally:
        await store.close()
