"""`orchestra worker` notices cancels of all the runs it serves with one status read per
poll: it makes a coordinator per run, and a watcher each made N workers on R runs read
N x R statuses per poll."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from orchestra import Coordinator, SQLiteBlackboard
from orchestra.cli.main import main

REPO = Path(__file__).resolve().parents[2]


async def test_a_worker_reads_the_status_of_all_its_runs_at_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from benchmarks.fanout import build

    monkeypatch.syspath_prepend(str(REPO))  # the worker loads benchmarks.fanout:build
    db = tmp_path / "w.db"
    run_input = {"tasks": 1, "tool_sleep": 60}  # each run's one task waits in its tool
    async with await SQLiteBlackboard.open(db) as store:
        runs = [(await Coordinator(store, build(run_input)).start(run_input)).id
                for _ in range(3)]
    reads: list[frozenset[str]] = []
    statuses = SQLiteBlackboard.run_statuses

    async def counting(self: SQLiteBlackboard, run_ids: list[str]) -> dict[str, str]:
        reads.append(frozenset(run_ids))
        return await statuses(self, run_ids)  # type: ignore[return-value]

    monkeypatch.setattr(SQLiteBlackboard, "run_statuses", counting)
    worker = asyncio.create_task(asyncio.to_thread(
        main, ["worker", "--db", str(db), "--idle-exit", "0.5", "--json"]))
    async with await SQLiteBlackboard.open(db) as store:
        for _ in range(600):  # until the worker watches all three runs (or gives up: 60 s)
            if any(read == set(runs) for read in reads) or worker.done():
                break
            await asyncio.sleep(0.1)
        for run_id in runs:  # what `orchestra cancel` does from another process
            await store.set_run_status(run_id, "cancelled")
        code = await asyncio.wait_for(worker, timeout=60)
        assert {(await store.get_run(r)).status for r in runs} == {"cancelled"}
    assert code == 0
    assert reads and all(read == set(runs) for read in reads if len(read) > 1)
    assert max(len(read) for read in reads) == 3  # one read covered all three runs


async def test_a_worker_serving_one_run_does_not_poll_it_while_its_drive_runs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from benchmarks.fanout import build

    monkeypatch.syspath_prepend(str(REPO))
    db = tmp_path / "one.db"
    run_input = {"tasks": 1, "tool_sleep": 1.5}  # the drive is busy for 1.5 s
    async with await SQLiteBlackboard.open(db) as store:
        run = await Coordinator(store, build(run_input)).start(run_input)
    reads: list[str] = []
    get_run = SQLiteBlackboard.get_run

    async def counting(self: SQLiteBlackboard, run_id: str) -> object:
        reads.append(run_id)
        return await get_run(self, run_id)

    monkeypatch.setattr(SQLiteBlackboard, "get_run", counting)
    code = await asyncio.to_thread(main, ["worker", "--db", str(db), "--run", run.id, "--json"])
    assert code == 0
    async with await SQLiteBlackboard.open(db) as store:
        assert (await store.get_run(run.id)).status == "completed"
    assert len(reads) < 6  # not one per 0.2 s look (about 8 in 1.5 s) while it drove
