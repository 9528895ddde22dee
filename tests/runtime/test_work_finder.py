"""How a worker takes runs from a backlog (``WorkFinder``): a batch per look while its
loop keeps up, one while it runs late, and never the whole backlog through the sweep
(which used to hand the first worker up every pending run, so a second worker idled)."""

from __future__ import annotations

import asyncio
import random
import time
from pathlib import Path

from orchestra import (
    Coordinator,
    FunctionModel,
    NewTask,
    Pipeline,
    Role,
    SQLiteBlackboard,
    reply,
)
from orchestra.coordinator.finding import WorkFinder
from orchestra.coordinator.load import BUSY_CPU, LATE, Load, LoopLag
from orchestra.coordinator.owners import new_owner_id
from orchestra.coordinator.served_versions import ServedVersions
from orchestra.coordinator.serving import ParkedRuns
from orchestra.store import Lease


class Echo(Role):
    """You answer."""

    name = "echo"
    output = str
    recall = False


def _pipeline() -> Pipeline:
    return Pipeline("echo", roles=[Echo()], model=FunctionModel(lambda _r: reply("x")),
                    start=lambda inp: [NewTask("echo", inp)])


class _Load(Load):
    """A load that reads what the test says."""

    def __init__(self) -> None:
        super().__init__()
        self.is_busy = False

    def busy(self) -> bool:
        return self.is_busy


async def _backlog(store: SQLiteBlackboard, n: int) -> list[str]:
    coord = Coordinator(store, _pipeline())
    return [(await coord.start({"i": i})).id for i in range(n)]


def _finder(store: SQLiteBlackboard, load: Load, batch: int) -> WorkFinder:
    return WorkFinder(store, ParkedRuns(store, new_owner_id(), 30.0), lease_seconds=30.0,
                      batch=batch, load=load, rng=random.Random(7),
                      versions=ServedVersions(lambda _run: _pipeline()))


async def test_a_look_takes_a_batch_and_leaves_the_rest_of_the_backlog(tmp_path: Path) -> None:
    async with await SQLiteBlackboard.open(tmp_path / "s.db") as store:
        runs = await _backlog(store, 10)
        finder = _finder(store, _Load(), batch=3)
        first = await finder.runs(())  # the first look also sweeps the active runs
        assert len(first) == 3 and set(first) <= set(runs[:6])  # among the oldest 2 x 3
        assert finder.full
        assert first == sorted(first, key=runs.index)  # oldest first
        second = await finder.runs(first)
        assert len(second) == 3 and not set(second) & set(first)
        third = await finder.runs(first + second)
        assert len(third) == 3 and finder.full  # 4 were left: all it asked for
        assert len(await finder.runs(first + second + third)) == 1 and not finder.full


async def test_a_busy_worker_takes_one_run_per_look(tmp_path: Path) -> None:
    async with await SQLiteBlackboard.open(tmp_path / "s.db") as store:
        await _backlog(store, 10)
        load = _Load()
        finder = _finder(store, load, batch=4)
        load.is_busy = True
        first = await finder.runs(())  # serving nothing yet: start-up is not load
        assert len(first) == 4
        assert len(await finder.runs(first)) == 1
        assert not finder.full  # one run, as a busy worker takes: no hurry to look again
        load.is_busy = False
        assert len(await finder.runs(first)) == 4
        assert finder.full  # a whole batch with room to spare: a backlog is waiting


async def test_the_sweep_still_takes_a_run_nobody_serves_that_has_no_claimable_work(
        tmp_path: Path) -> None:
    async with await SQLiteBlackboard.open(tmp_path / "s.db") as store:
        stranded, *backlog = await _backlog(store, 4)
        task = await store.claim_task("gone:1:w", run_id=stranded, lease_seconds=600)
        assert task is not None  # its worker finished the last task, then died
        await store.complete_task(task.id, Lease("gone:1:w", task.attempt), "x",
                                  agent_id="echo")
        assert (await store.get_run(stranded)).status in ("pending", "running")  # live
        finder = _finder(store, _Load(), batch=1)
        found = await finder.runs(())
        assert stranded in found and len(found) == 2  # one of the backlog, and the stranded
        assert not set(found) - {stranded} - set(backlog)


async def test_runs_skipped_here_are_neither_taken_nor_kept_live(tmp_path: Path) -> None:
    """A worker's runs it cannot serve (``skip``): no look or sweep hands them back, and
    a store holding only those lets the worker go idle."""
    async with await SQLiteBlackboard.open(tmp_path / "s.db") as store:
        runs = await _backlog(store, 3)
        finder = _finder(store, _Load(), batch=10)
        assert await finder.runs((), skip=runs[:2]) == runs[2:]
        assert finder.live
        finder = _finder(store, _Load(), batch=10)  # a new finder: its first look sweeps
        assert await finder.runs((), skip=runs) == []
        assert not finder.live  # nothing left it could serve


async def test_loop_lag_reads_how_late_a_blocked_loop_runs() -> None:
    lag = LoopLag(tick=0.01)
    assert lag.read() == 0.0
    await asyncio.sleep(0.05)
    assert lag.read() < LATE  # an idle loop is on time
    time.sleep(0.2)  # the loop is blocked: its tick is overdue
    assert lag.read() >= 0.1
    lag.close()


async def test_load_is_busy_on_a_saturated_cpu_or_a_late_loop() -> None:
    cpu, clock = [0.0], [0.0]
    load = Load(cpu=lambda: cpu[0], clock=lambda: clock[0], lag=LoopLag(tick=0.2))
    clock[0], cpu[0] = 1.0, 0.2  # a fifth of a core: room left
    assert not load.busy()
    clock[0], cpu[0] = 2.0, 0.2 + BUSY_CPU  # a saturated core since the last reading
    assert load.busy()
    clock[0] = 3.0
    assert not load.busy()
    time.sleep(0.5)  # the loop is blocked: late, whatever the CPU reads
    clock[0] = 4.0
    assert load.busy()
    load.close()
