"""Store calls per S2 step: one ``orchestra worker`` beside the same runs driven in-loop.

    python -m benchmarks.profiling.worker_calls [--pipelines 200]

Issue 25: a worker spent more CPU per step than one process driving the same
pipelines. Each store call is a round trip (a hop to SQLite's thread, or a statement
to PostgreSQL), so the calls a worker makes that the in-loop driver does not are
where its extra CPU goes first. Two passes on fresh files, each counting every call
of the store's public coroutine methods:

* ``in-loop``: ``Coordinator.run`` for each pipeline, all at once (as S2 measures);
* ``worker``: the pipelines created as pending runs, then ``orchestra worker`` run in
  this process (``orchestra.cli.main.main``) until idle: the worker's own code path.

Per step (17 per pipeline) and per pipeline, each method's calls; counts, not times,
so the figures hold on a busy machine. It is measured, not a test.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import inspect
import os
import tempfile
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

from benchmarks.s2_workers import _create, build
from benchmarks.workload import CALLS_PER_PIPELINE
from orchestra import Coordinator, CoordinatorSettings, SQLiteBlackboard
from orchestra.cli.main import main as cli_main


@contextlib.contextmanager
def counted(calls: Counter[str]) -> Iterator[None]:
    """Count calls of every public coroutine method of ``SQLiteBlackboard`` (restored after)."""
    saved: dict[str, Any] = {}
    for name in dir(SQLiteBlackboard):
        method = getattr(SQLiteBlackboard, name)
        if name.startswith("_") or not inspect.iscoroutinefunction(method):
            continue
        saved[name] = method

        async def counting(*args: Any, _m: Callable[..., Awaitable[Any]] = method,
                           _n: str = name, **kwargs: Any) -> Any:
            calls[_n] += 1
            return await _m(*args, **kwargs)

        setattr(SQLiteBlackboard, name, counting)
    try:
        yield
    finally:
        for name, method in saved.items():
            setattr(SQLiteBlackboard, name, method)


async def _in_loop(db: Path, n: int, calls: Counter[str]) -> None:
    async with await SQLiteBlackboard.open(db) as store:
        coord = Coordinator(store, build({}), settings=CoordinatorSettings(concurrency=100_000))
        with counted(calls):
            await asyncio.gather(*(coord.run({"i": i}) for i in range(n)))


def _worker(db: Path, n: int, calls: Counter[str]) -> None:
    asyncio.run(_create(db, n))
    with counted(calls), open(os.devnull, "w") as out, contextlib.redirect_stdout(out):
        if cli_main(["worker", "--db", str(db), "--idle-exit", "0.5"]) != 0:
            raise SystemExit("the worker failed")


def main(argv: list[str] | None = None) -> dict[str, dict[str, float]]:
    p = argparse.ArgumentParser(prog="python -m benchmarks.profiling.worker_calls",
                                description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pipelines", type=int, default=200)
    args = p.parse_args(argv)
    os.environ.setdefault("ORCHESTRA_PRICES", "fake=0/0")  # as benchmarks.s2_workers
    passes: dict[str, Counter[str]] = {"in-loop": Counter(), "worker": Counter()}
    with tempfile.TemporaryDirectory(prefix="wcalls-") as tmp:
        asyncio.run(_in_loop(Path(tmp) / "in.db", args.pipelines, passes["in-loop"]))
        _worker(Path(tmp) / "w.db", args.pipelines, passes["worker"])
    steps = args.pipelines * CALLS_PER_PIPELINE
    names = sorted(set(passes["in-loop"]) | set(passes["worker"]),
                   key=lambda m: -passes["worker"][m] - passes["in-loop"][m])
    print(f"{'store call':26} {'in-loop':>16} {'worker':>16}   (per step, per pipeline)")
    for name in [*names, "all"]:
        row = [sum(c.values()) if name == "all" else c[name] for c in passes.values()]
        print(f"{name:26} " + " ".join(f"{v / steps:7.2f} {v / args.pipelines:7.1f} "
                                       for v in row))
    return {label: {k: v / steps for k, v in c.items()} for label, c in passes.items()}


if __name__ == "__main__":
    main()
