"""Round trips to PostgreSQL per S1 step: every statement the store sends, counted.

    python -m benchmarks.postgres.round_trips [--pipelines 5]

Runs S1's pipelines (17 model calls each, zero latency) on a store with ONE pooled
connection whose statements its ``trace`` hook (asyncpg's query logger) counts, after one warm-up
pipeline (a statement's first use also prepares it: one more round trip, once per
connection). ``per_step`` is every statement of the measured pipelines (the run's
creation and the coordinator's reads included) over their steps; ``writes_per_step``
counts only the step's own write (``orchestra_step``, ``orchestra_start_step``) and
the general path's transactions (``BEGIN``). asyncpg's logger does not see
``executemany`` (one more round trip, on the general path only), so a general-path
figure is a floor.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
from collections.abc import AsyncIterator

from benchmarks.postgres.local import shared_server
from benchmarks.sides.orchestra_side import FakeAdapter, pipeline
from benchmarks.workload import CALLS_PER_PIPELINE, FakeModel
from orchestra import Coordinator
from orchestra.store.postgres import PostgresBlackboard

_STEP_WRITES = ("SELECT * FROM orchestra_step(", "SELECT orchestra_start_step(")


class Statements:
    """A store's ``trace`` hook (``PostgresBlackboard.open(trace=...)``) keeping the
    statements its pool's connections complete while :meth:`counting`."""

    def __init__(self) -> None:
        self._into: list[str] | None = None

    def __call__(self, connection: str, sql: str) -> None:
        if self._into is not None:
            self._into.append(sql)

    @contextlib.asynccontextmanager
    async def counting(self) -> AsyncIterator[list[str]]:
        """The statements completed while inside."""
        sent: list[str] = []
        self._into = sent
        try:
            yield sent
            await asyncio.sleep(0)  # asyncpg calls its logger soon after each statement
        finally:
            self._into = None


def writes(sent: list[str]) -> int:
    """The step writes and general-path transactions among ``sent``."""
    return sum(1 for q in sent if q.startswith(_STEP_WRITES) or q == "BEGIN;")


async def per_step(dsn: str, pipelines: int) -> dict[str, float]:
    """Statements per S1 step over ``pipelines`` pipelines after one warm-up."""
    statements = Statements()
    store = await PostgresBlackboard.open(dsn, pool_size=1, trace=statements)
    try:
        coord = Coordinator(store, pipeline(FakeAdapter(FakeModel(latency=0.0))))
        await coord.run({"i": -1})
        async with statements.counting() as sent:
            for i in range(pipelines):
                run = await coord.run({"i": i})
                assert run.status == "completed", run.error
        steps = pipelines * CALLS_PER_PIPELINE
        return {"per_step": len(sent) / steps, "writes_per_step": writes(sent) / steps}
    finally:
        await store.close()


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.postgres.round_trips",
                                description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pipelines", type=int, default=5)
    args = p.parse_args(argv)
    dsn = shared_server().create_database("rt" + os.urandom(4).hex())
    print(json.dumps({"S1_round_trips": asyncio.run(per_step(dsn, args.pipelines))}))


if __name__ == "__main__":
    main()
