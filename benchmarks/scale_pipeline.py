"""The pipeline of ``benchmarks.scale``: a chain of fan-out ``unit`` tasks per run that
keeps going until a deadline, each model call waiting a seeded 1-5 s.

``orchestra worker`` loads it by reference (``benchmarks.scale_pipeline:build``). A run
of ``{"until": T, "seed": S, "run": i, "latency": [lo, hi], "effects": path}`` starts one
``unit`` task (``benchmarks/fanout.py``'s role: model, ``effect`` tool, model: three
journaled steps); each completed task hands off to the next while the clock is before
``until`` (the route runs in the completing transaction), so every run is working for
the benchmark's whole duration and finishes soon after it. Each model call waits
``uniform(lo, hi)`` seconds drawn from ``(seed, run, call)``: the same call waits as long
when a worker that took the task over makes it again.
"""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any

from benchmarks.fanout import Done, Unit, _script
from orchestra import (
    FunctionModel,
    ModelRequest,
    ModelResponse,
    NewTask,
    Pipeline,
    Task,
    handoff,
)
from orchestra.store import Writes

REF = "benchmarks.scale_pipeline:build"


def _model(seed: int, run: int, low: float, high: float) -> FunctionModel:
    async def slow(request: ModelRequest) -> ModelResponse:
        call = f"{seed}:{run}:{len(request.messages)}:{request.messages[-1].content}"
        await asyncio.sleep(random.Random(call).uniform(low, high))
        return _script(request)

    return FunctionModel(slow, name="scale")


def build(run_input: Any) -> Pipeline:
    inp = run_input if isinstance(run_input, dict) else {}
    until = float(inp.get("until", 0))
    low, high = (float(x) for x in inp.get("latency", (1.0, 5.0)))

    def next_unit(out: Done, task: Task, writes: Writes) -> list[Any]:
        return [handoff(Unit, f"n={out.n + 1}")] if time.time() < until else []

    return Pipeline("scale", roles=[Unit(inp.get("effects"), 0.0)],
                    model=_model(int(inp.get("seed", 0)), int(inp.get("run", 0)), low, high),
                    start=lambda i: [NewTask("unit", "n=0", max_attempts=2)],
                    routes={Unit: next_unit}, ref=REF)
