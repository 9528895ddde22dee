"""The LangGraph side of the PostgreSQL benchmarks: the workload's graph
(``benchmarks.sides.langgraph_side``) checkpointed by ``AsyncPostgresSaver``
(``langgraph-checkpoint-postgres``, psycopg 3) on the same server as orchestra.

The saver gets a pool of ``POOL`` connections (orchestra's PostgreSQL store gets the
same), opened as LangGraph documents (autocommit, ``prepare_threshold=0``, dict rows).
Durability ``sync``: each step's checkpoint is committed before the next step starts,
as orchestra commits each step; ``async`` (LangGraph's default) overlaps the write
with the next step.
"""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

from benchmarks import measure
from benchmarks.sides.langgraph_side import (
    _config,
    _durability,
    check_pipeline,
    initial_state,
    pipeline_graph,
)
from benchmarks.workload import CALLS_PER_PIPELINE, FakeModel

POOL = 8


async def pipelines(dsn: str, n: int, durability: str, latency: float, concurrent: bool
                    ) -> measure.Metrics:
    """S1 (``latency`` 0, one after another) or S2 (all at once) with ``n`` pipelines."""
    model = FakeModel(latency=latency)
    finals: list[dict[str, Any]] = []
    kwargs = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
    async with AsyncConnectionPool(dsn, min_size=POOL, max_size=POOL, kwargs=kwargs,
                                   open=False) as pool:
        saver = AsyncPostgresSaver(pool)  # type: ignore[arg-type]
        await saver.setup()
        graph = pipeline_graph(model).compile(checkpointer=saver)
        mode = _durability(durability)

        async def run_one(i: int) -> None:
            finals.append(await graph.ainvoke(initial_state(), _config(f"p-{i}"),
                                              durability=mode))

        if concurrent:
            metrics = await measure.concurrent(run_one, n, latency)
        else:
            metrics = await measure.sequential(run_one, n)
    for final in finals:
        check_pipeline(final)
    warmup = measure.S2_WARMUP if concurrent else measure.S1_WARMUP
    assert model.calls == CALLS_PER_PIPELINE * (n + warmup), model.calls
    return metrics
