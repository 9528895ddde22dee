"""What tracing costs per run: N one-step runs with tracing off, then on (the SDK with an
in-memory exporter), interleaved, medians of REPS. ``python -m benchmarks.tracing_overhead``"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from orchestra import Coordinator, FunctionModel, NewTask, Pipeline, Role, SQLiteBlackboard
from orchestra.tracing import Tracing


class Echo(Role):
    """You answer ok."""


async def _ms_per_run(db: Path, runs: int, tracing: Tracing | None) -> float:
    store = await SQLiteBlackboard.open(db)
    try:
        pipeline = Pipeline("bench", roles=[Echo()], start=lambda i: [NewTask("echo", i)],
                            model=FunctionModel(lambda r: "ok"))
        coordinator = Coordinator(store, pipeline, tracing=tracing)
        start = time.perf_counter()
        for i in range(runs):
            await coordinator.run({"i": i})
        return (time.perf_counter() - start) / runs * 1000
    finally:
        await store.close()


def _tracing() -> Tracing:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(InMemorySpanExporter()))
    return Tracing(provider)


async def main(runs: int = 200, reps: int = 3) -> None:
    off: list[float] = []
    on: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(reps):
            off.append(await _ms_per_run(Path(tmp) / f"off{rep}.db", runs, None))
            on.append(await _ms_per_run(Path(tmp) / f"on{rep}.db", runs, _tracing()))
    print(f"{runs} one-step runs, medians of {reps} (min-max): tracing off "
          f"{statistics.median(off):.2f} ms/run ({min(off):.2f}-{max(off):.2f}), on "
          f"{statistics.median(on):.2f} ms/run ({min(on):.2f}-{max(on):.2f})")


if __name__ == "__main__":
    asyncio.run(main(*(int(a) for a in sys.argv[1:])))
