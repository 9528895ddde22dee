"""Cancel, timeout and retry paths, through the public library API on a real store."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from e2e_helpers import event_seqs_gap_free
from pydantic import BaseModel

from orchestra import (
    Coordinator,
    CoordinatorSettings,
    FunctionModel,
    ModelAPIError,
    ModelRequest,
    NewTask,
    Pipeline,
    Role,
    ScriptedModel,
    SQLiteBlackboard,
    UserError,
    reply,
)
from orchestra.types import Event

FAST = CoordinatorSettings(retry_base=0.01, poll_interval=0.02, lease_seconds=0.6)


class Answer(BaseModel):
    value: int


class Worker(Role):
    """You answer {"value": n}."""

    output = Answer
    recall = False
    concurrency = 2


class Sleepy(Worker):
    """You answer {"value": n}, slowly."""

    name = "sleepy"
    task_timeout = 0.2
    max_attempts = 2


def pipeline(model: Any, *, role: Role | None = None, tasks: int = 1,
             max_attempts: int = 3) -> Pipeline:
    role = role or Worker()
    return Pipeline("e2e", roles=[role], model=model,
                    start=lambda inp: [NewTask(role.name, {"i": i}, max_attempts=max_attempts)
                                       for i in range(tasks)])


async def until(check: Callable[[], Any], what: str, within: float = 10.0) -> None:
    deadline = time.monotonic() + within
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.01)


async def all_events(store: SQLiteBlackboard, run_id: str) -> list[Event]:
    return await store.events(run_id, starting_after=0, limit=10_000)


def blocking_model() -> tuple[FunctionModel, list[int]]:
    """A model whose every call blocks until cancelled; ``entered`` counts the calls."""
    entered: list[int] = []

    async def block(request: ModelRequest) -> str:
        entered.append(1)
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    return FunctionModel(block, name="blocker"), entered


async def assert_cancelled_cleanly(store: SQLiteBlackboard, path: Path, run_id: str) -> None:
    tasks = await store.list_tasks(run_id)
    assert tasks and {t.status for t in tasks} == {"cancelled"}
    assert all(t.lease_owner is None and t.lease_expires_at is None for t in tasks)
    assert await store.list_tasks(run_id, status="running") == []
    log = await all_events(store, run_id)
    kinds = [e.kind for e in log]
    assert kinds.count("run.cancelled") == 1
    assert not {"run.completed", "run.failed"} & set(kinds)
    after = kinds[kinds.index("run.cancelled") + 1:]
    # nothing but the cancel's own records: steps in flight cancelled, then the tasks
    steps = after.count("step.cancelled")
    assert after == ["step.cancelled"] * steps + ["task.cancelled"] * len(tasks), \
        "nothing but the cancel after the cancel"
    assert (await store.step_counts(run_id))["cancelled"] == steps
    event_seqs_gap_free(path, run_id)


async def test_cancel_a_running_run(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    model, entered = blocking_model()
    async with await SQLiteBlackboard.open(path) as store:
        coord = Coordinator(store, pipeline(model, tasks=3), settings=FAST)
        run = await coord.start({})
        driving = asyncio.create_task(coord.drive(run.id))
        await until(lambda: len(entered) == 2, "two tasks inside the model")
        assert (await store.task_counts(run.id)) == {"running": 2, "pending": 1}

        cancelled = await coord.cancel(run.id)
        assert cancelled.status == "cancelled"
        final = await asyncio.wait_for(driving, 10)
        assert final.status == "cancelled"
        await assert_cancelled_cleanly(store, path, run.id)

        with pytest.raises(UserError, match=f"run {run.id} was cancelled; start a new run"):
            await coord.resume(run.id)
        other = Coordinator(store, pipeline(model), settings=FAST)
        with pytest.raises(UserError, match="cancelled"):
            await other.resume(run.id)
        assert (await other.drive(run.id)).status == "cancelled"  # drive: a no-op
        assert len(entered) == 2, "no model call after the cancel"
        await assert_cancelled_cleanly(store, path, run.id)


async def test_cancel_from_another_coordinator_stops_the_driver(tmp_path: Path) -> None:
    """What `orchestra cancel RUN` does from another process: the driver must end with the
    run cancelled, not flip it to completed because no task is left to run."""
    path = tmp_path / "s.db"
    model, entered = blocking_model()
    async with await SQLiteBlackboard.open(path) as store, \
            await SQLiteBlackboard.open(path) as other_store:
        coord = Coordinator(store, pipeline(model, tasks=2), settings=FAST)
        run = await coord.start({})
        driving = asyncio.create_task(coord.drive(run.id))
        await until(lambda: len(entered) == 2, "two tasks inside the model")

        await Coordinator(other_store, pipeline(model), settings=FAST).cancel(run.id)
        final = await asyncio.wait_for(driving, 10)  # the heartbeat finds the lease gone
        assert final.status == "cancelled"
        assert (await store.get_run(run.id)).status == "cancelled"
        await assert_cancelled_cleanly(store, path, run.id)


@pytest.mark.parametrize(("role_attempts", "task_attempts", "expected"),
                         [(2, 3, 2), (3, 2, 2), (3, 3, 3)])
async def test_task_timeout_retries_then_fails_the_run(tmp_path: Path, role_attempts: int,
                                                       task_attempts: int,
                                                       expected: int) -> None:
    path = tmp_path / "s.db"
    calls: list[float] = []

    async def slow(request: ModelRequest) -> str:
        calls.append(time.monotonic())
        await asyncio.sleep(30)
        return '{"value": 1}'

    role = type("Sleepy2", (Sleepy,), {"name": "sleepy", "max_attempts": role_attempts,
                                       "__doc__": Sleepy.__doc__})()
    async with await SQLiteBlackboard.open(path) as store:
        coord = Coordinator(store, pipeline(FunctionModel(slow), role=role,
                                            max_attempts=task_attempts), settings=FAST)
        final = await asyncio.wait_for(coord.run({}), 20)
        assert final.status == "failed"
        assert final.error is not None and "task timed out after 0.2 s" in final.error
        assert len(calls) == expected, "one model call per attempt"

        (task,) = await store.list_tasks(final.id)
        assert task.status == "failed" and "timed out" in (task.error or "")
        assert task.attempt == expected and task.retries == expected - 1
        # resumable state: nothing running, no lease held
        assert task.lease_owner is None and task.lease_expires_at is None
        assert await store.task_counts(final.id) == {"failed": 1}
        kinds = [e.kind for e in await all_events(store, final.id)]
        assert kinds.count("task.retrying") == expected - 1
        assert kinds.count("task.failed") == 1 and kinds.count("run.failed") == 1
        assert kinds[-1] == "run.failed"
        event_seqs_gap_free(path, final.id)


async def test_resuming_a_failed_run_gives_its_failed_task_another_go(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    slow = {"on": True}

    async def model(request: ModelRequest) -> str:
        if slow["on"]:
            await asyncio.sleep(30)
        return '{"value": 5}'

    async with await SQLiteBlackboard.open(path) as store:
        coord = Coordinator(store, pipeline(FunctionModel(model), role=Sleepy()),
                            settings=FAST)
        failed = await asyncio.wait_for(coord.run({}), 20)
        assert failed.status == "failed"
        slow["on"] = False  # the cause is fixed; resume
        final = await asyncio.wait_for(coord.resume(failed.id), 20)
        assert final.status == "completed", final.error


def overloaded(request: ModelRequest) -> str:
    raise ModelAPIError("503 overloaded, try again", model="m", retryable=True, status=503)


async def test_retryable_model_error_is_retried_once_then_completes(tmp_path: Path) -> None:
    path = tmp_path / "s.db"

    model = ScriptedModel([overloaded, reply('{"value": 7}')])
    async with await SQLiteBlackboard.open(path) as store:
        coord = Coordinator(store, pipeline(model), settings=FAST)
        final = await asyncio.wait_for(coord.run({}), 20)
        assert final.status == "completed", final.error
        model.assert_complete()
        (task,) = await store.list_tasks(final.id)
        assert task.status == "completed" and task.result == {"value": 7}
        assert task.retries == 1 and task.attempt == 2
        log = await all_events(store, final.id)
        retrying = [e.data for e in log if e.kind == "task.retrying"]
        assert len(retrying) == 1 and "503 overloaded" in retrying[0]["error"]
        # retry 1 started a fresh journal
        assert [(s.kind, s.status) for s in await store.get_steps(task.id, 1)] == [
            ("model", "completed")]
        assert [s.kind for s in await store.get_steps(task.id, 0)] == ["model"]
        event_seqs_gap_free(path, final.id)


async def test_a_failed_model_call_stays_failed_in_the_journal(tmp_path: Path) -> None:
    path = tmp_path / "s.db"

    model = ScriptedModel([overloaded, reply('{"value": 7}')])
    async with await SQLiteBlackboard.open(path) as store:
        coord = Coordinator(store, pipeline(model), settings=FAST)
        final = await asyncio.wait_for(coord.run({}), 20)
        assert final.status == "completed", final.error
        (task,) = await store.list_tasks(final.id)
        (step,) = await store.get_steps(task.id, 0)
        assert (step.kind, step.status) == ("model", "failed")
        assert step.error is not None and "503 overloaded" in step.error
        counts = await store.step_counts(final.id)
        assert counts["failed"] == 1 and counts["started"] == 0 and counts["reissued"] == 0


async def test_non_retryable_model_error_fails_at_once(tmp_path: Path) -> None:
    path = tmp_path / "s.db"

    def refused(request: ModelRequest) -> str:
        raise ModelAPIError("401 bad api key", model="m", retryable=False, status=401)

    model = ScriptedModel([refused])
    async with await SQLiteBlackboard.open(path) as store:
        coord = Coordinator(store, pipeline(model), settings=FAST)
        final = await asyncio.wait_for(coord.run({}), 20)
        assert final.status == "failed" and "401 bad api key" in (final.error or "")
        (task,) = await store.list_tasks(final.id)
        assert task.status == "failed" and task.retries == 0 and task.lease_owner is None
        kinds = [e.kind for e in await all_events(store, final.id)]
        assert "task.retrying" not in kinds and kinds[-1] == "run.failed"
