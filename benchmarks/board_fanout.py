"""Fan-out of board entries: 1,000 entries into 20 subscriptions, cost per entry.

Twenty roles consume the same entry type; each entry therefore triggers twenty tasks,
each with its consumption record, all in the entry's own transaction. Measured per
entry, on SQLite and on PostgreSQL (a local server the benchmark starts):

* ``match_us``: deciding which roles an entry triggers (the pure function, with each
  task's input checked against its role's input model);
* ``post_ms``: committing the entry with its twenty triggers (``post_entry``), one
  entry per transaction, one after another;
* ``bare_ms``: committing an entry that triggers nothing, for comparison.

    python -m benchmarks.board_fanout                 # both stores
    python -m benchmarks.board_fanout --stores sqlite --entries 200
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import pydantic

from orchestra import NewTask, On, Pipeline, Role
from orchestra.coordinator.subscriptions import entry_triggers, pending, subscribers
from orchestra.store import Blackboard, SQLiteBlackboard
from orchestra.store.entry_protocol import NewEntry


class Item(pydantic.BaseModel):
    n: int
    text: str


def _role(i: int) -> Role[Any, Any]:
    cls = type(f"Sub{i}", (Role,), {"__doc__": "You consume items.", "input": Item,
                                     "consumes": [On(Item)]})
    return cls()  # type: ignore[no-any-return]


def pipeline(subscriptions: int) -> Pipeline:
    return Pipeline("fanout", roles=[_role(i) for i in range(subscriptions)],
                    start=lambda inp: [NewTask("sub0", inp)], ref="benchmarks.board_fanout:x")


async def measure(store: Blackboard, entries: int, subscriptions: int) -> dict[str, Any]:
    p = pipeline(subscriptions)
    subs = subscribers(p)
    run = await store.create_run("fanout", {})
    news = [NewEntry.of(Item(n=i, text="an item of the board " * 4)) for i in range(entries)]
    started = time.perf_counter()
    plans = [entry_triggers(p, subs, pending(e, run.id, "operator", None)) for e in news]
    match = time.perf_counter() - started
    assert all(len(t) == subscriptions for t in plans)
    started = time.perf_counter()
    for new, triggers in zip(news, plans, strict=True):
        await store.post_entry(run.id, "operator", new, triggers=triggers)
    post = time.perf_counter() - started
    bare_run = await store.create_run("fanout", {})
    started = time.perf_counter()
    for i in range(entries):
        await store.post_entry(bare_run.id, "operator", Item(n=i, text="bare"))
    bare = time.perf_counter() - started
    tasks = await store.task_counts(run.id)
    consumed = len(await store.get_consumptions(run.id))
    assert consumed == entries * subscriptions == tasks.get("pending", 0), (consumed, tasks)
    return {"entries": entries, "subscriptions": subscriptions, "tasks": consumed,
            "match_us": round(match / entries * 1e6, 1),
            "post_ms": round(post / entries * 1e3, 3),
            "bare_ms": round(bare / entries * 1e3, 3)}


async def run_sqlite(entries: int, subscriptions: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        async with await SQLiteBlackboard.open(Path(tmp) / "fanout.db") as store:
            return {"store": "sqlite", **await measure(store, entries, subscriptions)}


async def run_postgres(entries: int, subscriptions: int) -> dict[str, Any]:
    from benchmarks.postgres.local import shared_server
    from orchestra.store.postgres import PostgresBlackboard

    dsn = shared_server().create_database("fanout" + os.urandom(4).hex())
    store = await PostgresBlackboard.open(dsn)
    try:
        return {"store": "postgres", **await measure(store, entries, subscriptions)}
    finally:
        await store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=1000)
    parser.add_argument("--subscriptions", type=int, default=20)
    parser.add_argument("--stores", default="sqlite,postgres")
    args = parser.parse_args()
    for name in args.stores.split(","):
        runner = run_sqlite if name == "sqlite" else run_postgres
        print(json.dumps(asyncio.run(runner(args.entries, args.subscriptions))), flush=True)


if __name__ == "__main__":
    main()
