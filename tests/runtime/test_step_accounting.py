"""``steps.reissued`` and ``steps.retried`` are exact, both ways.

``reissued``: journaled step executions started again because the process running
them died (or lost its lease). ``retried``: steps run again in a later retry of
their task, after an error. Neither may stand in for the other.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from orchestra import (
    Coordinator,
    CoordinatorSettings,
    FunctionModel,
    ModelAPIError,
    ModelRequest,
    ModelResponse,
    NewTask,
    Pipeline,
    Role,
    SQLiteBlackboard,
    reply,
)
from orchestra.store import Lease

FAST = CoordinatorSettings(retry_base=0.01, retry_max=0.02, poll_interval=0.02)


class Answer(BaseModel):
    value: int


class Flaky(Role):
    """You answer {"value": 1}."""

    name = "flaky"
    output = Answer
    max_attempts = 5


def _pipeline(model: FunctionModel) -> Pipeline:
    return Pipeline("flaky", roles=[Flaky()], model=model,
                    start=lambda inp: [NewTask("flaky", inp, max_attempts=5)])


async def test_errors_retried_are_not_reissues(tmp_path: Path) -> None:
    """A model that fails three times (retryable) and then answers: three retries, no
    reissue. (Before: the deferred start of each failed call landed after its failure
    and reopened it, so ``show`` reported reissues with no crash at all.)"""
    calls = 0

    def script(request: ModelRequest) -> ModelResponse:
        nonlocal calls
        calls += 1
        if calls <= 3:
            raise ModelAPIError("503 from the provider", retryable=True)
        return reply('{"value": 1}')

    async with await SQLiteBlackboard.open(tmp_path / "s.db") as store:
        run = await Coordinator(store, _pipeline(FunctionModel(script)), settings=FAST).run({})
        assert run.status == "completed", run.error
        counts = await store.step_counts(run.id)
        [task] = await store.list_tasks(run.id)
        journal = [(s.retry, s.status, s.attempts) for r in range(4)
                   for s in await store.get_steps(task.id, r)]
    assert calls == 4
    assert journal == [(0, "failed", 1), (1, "failed", 1), (2, "failed", 1), (3, "completed", 1)]
    assert (counts["reissued"], counts["retried"], counts["failed"], counts["started"]) == \
        (0, 3, 3, 0)


async def test_a_dead_workers_in_flight_call_run_again_is_a_reissue(tmp_path: Path) -> None:
    """A worker died with its task's model call in flight; another process runs the call
    again. The call is counted as reissued even when the model answers at once (before:
    the deferred start landed after the completion and the count read 0)."""
    calls = 0

    def script(request: ModelRequest) -> ModelResponse:
        nonlocal calls
        calls += 1
        return reply('{"value": 1}')

    pipeline = _pipeline(FunctionModel(script))
    async with await SQLiteBlackboard.open(tmp_path / "s.db") as store:
        coord = Coordinator(store, pipeline, settings=FAST)
        run = await coord.start({})
        # the dead worker: it claimed the task (the claim journals its first model call
        # as in flight) and died with the call in flight
        [task] = await store.claim_tasks("host:1:dead", capacity={"flaky": 1}, limit=1,
                                         run_id=run.id, lease_seconds=0.0)
        assert await store.get_steps(task.id, 0) == []  # no row until the step ends
        await store.release_leases(run.id)  # its lease has expired
        done = await coord.drive(run.id)
        assert done.status == "completed", done.error
        counts = await store.step_counts(run.id)
        [step] = await store.get_steps(task.id, 0)
        [agent] = await store.agent_infos(run.id)
    assert calls == 1  # the dead worker's call never returned here
    assert (step.status, step.attempts) == ("completed", 2)
    assert (counts["reissued"], counts["retried"]) == (1, 0)
    assert agent.steps_reissued == 1


async def test_a_retry_after_an_error_and_then_a_takeover_counts_one_reissue(
        tmp_path: Path) -> None:
    """The retry's own first claim is not a reissue (a retry starts anew); a claim of the
    same retry after its worker died is. Counted from the task's claims, no start row."""
    calls = 0

    def script(request: ModelRequest) -> ModelResponse:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise ModelAPIError("503 from the provider", retryable=True)
        return reply('{"value": 1}')

    pipeline = _pipeline(FunctionModel(script))
    async with await SQLiteBlackboard.open(tmp_path / "s.db") as store:
        coord = Coordinator(store, pipeline, settings=FAST)
        run = await coord.start({})
        [task] = await store.claim_tasks("host:1:w", capacity={"flaky": 1}, limit=1,
                                         run_id=run.id)
        # a worker whose call failed: retry 1
        await store.fail_task(task.id, Lease("host:1:w", task.attempt), "503",
                              retry_at=0.0)
        # retry 1 is claimed by a worker that dies at once, then taken over by coord
        [again] = await store.claim_tasks("host:1:dead", capacity={"flaky": 1}, limit=1,
                                          run_id=run.id, lease_seconds=0.0)
        assert (again.retries, again.attempt) == (1, 2)
        await store.release_leases(run.id)
        calls = 1  # the failed call happened above, outside this coordinator
        done = await coord.drive(run.id)
        assert done.status == "completed", done.error
        [step] = await store.get_steps(task.id, 1)
        counts = await store.step_counts(run.id)
    assert (step.status, step.attempts) == ("completed", 2)
    assert (counts["reissued"], counts["retried"]) == (1, 0)
