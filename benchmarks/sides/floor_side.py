"""The floor: the workload's calls in plain Python, no framework, no persistence
(S1 and S2 only). It bounds from below what any durable side can reach."""

from __future__ import annotations

from pathlib import Path

from benchmarks import measure
from benchmarks.workload import (
    CALLS_PER_PIPELINE,
    MESSAGES_SENT_PER_PIPELINE,
    FakeModel,
    PipelineResult,
    run_plain_pipeline,
)

NAME = "floor"
SCENARIOS = frozenset({"S1", "S2"})
MAX_REPS: dict[str, int] = {}


def durabilities(scenario: str) -> list[str]:
    return ["none"]


async def _pipelines(n: int, latency: float, concurrent: bool) -> measure.Metrics:
    model = FakeModel(latency=latency)
    results: list[PipelineResult] = []

    async def run_one(i: int) -> None:
        results.append(await run_plain_pipeline(model))

    if concurrent:
        metrics = await measure.concurrent(run_one, n, latency)
    else:
        metrics = await measure.sequential(run_one, n)
    for result in results:
        result.check()
    assert model.calls == CALLS_PER_PIPELINE * len(results), model.calls
    assert model.messages_sent == MESSAGES_SENT_PER_PIPELINE * len(results), "history not sent"
    return metrics | {"journal_mode": "-", "synchronous": "-"}


async def s1(n: int, durability: str, db_path: Path) -> measure.Metrics:
    return await _pipelines(n, 0.0, concurrent=False)


async def s2(n: int, durability: str, db_path: Path) -> measure.Metrics:
    return await _pipelines(n, measure.S2_LATENCY, concurrent=True)
