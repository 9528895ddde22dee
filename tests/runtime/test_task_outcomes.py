"""A task's end as typed data: the runtime returns one outcome variant and commits
nothing of a completed task's end; the executor acts on each variant (hands a completed
task in with its next claim in one transaction, fails, parks, or stops the run)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from orchestra import (
    Coordinator,
    CoordinatorSettings,
    FunctionModel,
    ModelRequest,
    NewTask,
    Pipeline,
    Role,
    SQLiteBlackboard,
    ToolContext,
    reply,
    tool,
    tool_call,
)
from orchestra.coordinator.execution import TaskExecutor, TaskServices
from orchestra.models.base import ModelResponse
from orchestra.runtime.agent_state import ATTEMPT_FAILED, AgentState
from orchestra.runtime.outcomes import Completed, Failed, Limited, Waiting
from orchestra.runtime.task_runner import TaskRunner
from orchestra.store import Lease, Writes


class Number(BaseModel):
    n: int


class Writer(Role[Any, Number]):
    """You answer {"n": 1}; you may ask for a signature first."""

    name = "writer"
    recall = False
    output_retries = 1

    @tool(needs_approval=True)
    async def sign(self, ctx: ToolContext) -> str:
        """Have a human sign."""
        return "signed"


class Reader(Role[Number, str]):
    """You read."""

    name = "reader"
    recall = False


def answers(writer: str | ModelResponse) -> FunctionModel:
    """The writer replies ``writer``; the reader says "read"."""
    def fn(req: ModelRequest) -> ModelResponse:
        if "You read." in req.messages[0].content:
            return reply("read")
        return writer if isinstance(writer, ModelResponse) else reply(writer)
    return FunctionModel(fn)


def pipeline(model: FunctionModel) -> Pipeline:
    return Pipeline("outcomes", roles=[Writer(), Reader()],
                    start=lambda inp: [NewTask("writer", inp, max_attempts=1)],
                    routes={Writer: Reader}, model=model)


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLiteBlackboard]:
    async with await SQLiteBlackboard.open(tmp_path / "o.db") as s:
        yield s


async def execute(store: SQLiteBlackboard, model: FunctionModel,
                  **settings: float) -> tuple[TaskExecutor, str]:
    """Run the writer's task through a coordinator's executor (no run loop: only the
    executor and the transactions it makes claim anything); the executor and run id."""
    coord = Coordinator(store, pipeline(model),
                        settings=CoordinatorSettings(**settings))  # type: ignore[arg-type]
    services = TaskServices(store, coord.pipeline, coord.models, coord.settings, coord.owner,
                            coord.pricer, None, coord.agent, coord.claim_spec)
    executor = TaskExecutor(services, coord.jobs)
    run = await store.create_run("outcomes", "go", tasks=[NewTask("writer", "go",
                                                                   max_attempts=1)])
    await store.set_run_status(run.id, "running")
    tasks = await store.claim_tasks(coord.owner, capacity={"writer": 1, "reader": 1}, limit=1,
                                    run_id=run.id)
    executor.start(run.id, tasks)
    while coord.jobs.of_run(run.id):
        await asyncio.gather(*coord.jobs.of_run(run.id))
    return executor, run.id


async def test_the_runtime_returns_completed_and_commits_nothing_of_the_end(
        store: SQLiteBlackboard) -> None:
    run = await store.create_run("outcomes", "go", tasks=[NewTask("writer", "go")])
    (task,) = await store.claim_tasks("w", capacity={"writer": 1}, limit=1)
    lease = Lease("w", task.attempt)
    outcome = await TaskRunner(store=store, role=Writer(), model=answers('{"n": 1}'),
                               agent=AgentState(f"{run.id}/writer", "writer", run.id),
                               task=task, lease=lease).run()
    assert isinstance(outcome, Completed) and outcome.kind == "completed"
    assert outcome.output == Number(n=1) and outcome.result == {"n": 1}
    assert outcome.step is not None and outcome.step.kind == "model"
    assert [m.role for m in outcome.writes.messages] == ["user", "assistant"]
    assert outcome.counts.steps_executed == 1 and outcome.counts.tokens > 0
    # nothing of the end is stored yet: the task runs, its last step is not recorded
    assert (await store.get_task(task.id)).status == "running"
    assert await store.get_steps(task.id, task.retries) == []
    assert await store.get_messages(f"{run.id}/writer") == []
    # the caller commits it all in one transaction
    assert await store.complete_task(task.id, lease, outcome.result, agent_id=f"{run.id}/writer",
                                     writes=outcome.writes, step=outcome.step) == []
    assert (await store.get_task(task.id)).result == {"n": 1}
    assert [s.status for s in await store.get_steps(task.id, task.retries)] == ["completed"]
    assert len(await store.get_messages(f"{run.id}/writer")) == 2


async def test_completed_is_handed_in_with_the_next_claim(store: SQLiteBlackboard) -> None:
    executor, run_id = await execute(store, answers('{"n": 1}'))
    writer, reader = sorted(await store.list_tasks(run_id), key=lambda t: t.created_at)
    assert (writer.status, writer.result) == ("completed", {"n": 1})
    # the route's handoff commits with the writer's end, and that transaction claimed the
    # reader's task: it ran next in the same job (nothing else claims here)
    assert (reader.role, reader.status, reader.result) == ("reader", "completed", "read")
    assert reader.attempt == 1 and reader.input == {"n": 1}
    assert executor.stop_error is None and executor.leases == {}


async def test_failed_is_recorded_with_its_messages_marked(store: SQLiteBlackboard) -> None:
    _, run_id = await execute(store, answers("no number here"))
    (task,) = await store.list_tasks(run_id)
    assert task.status == "failed" and "no usable answer" in (task.error or "")
    messages = await store.get_messages(f"{run_id}/writer")
    assert messages[-1].name == ATTEMPT_FAILED  # later views skip the failed attempt
    assert messages[-1].task_id == task.id


async def test_waiting_parks_the_task_for_a_human(store: SQLiteBlackboard) -> None:
    executor, run_id = await execute(store, answers(reply("", tool_call("sign"))))
    (task,) = await store.list_tasks(run_id)
    assert task.status == "waiting"
    (approval,) = await store.list_approvals(run_id)
    assert (approval.task_id, approval.tool, approval.status) == (task.id, "sign", "pending")
    assert executor.stop_error is None


async def test_limited_stops_the_run_and_gives_the_task_back(store: SQLiteBlackboard) -> None:
    calls = answers(reply("", tool_call("nothing")))  # an unknown tool: the model goes on
    executor, run_id = await execute(store, calls, max_tokens_per_run=1)
    (task,) = await store.list_tasks(run_id)
    assert executor.stop_error is not None and "token" in executor.stop_error
    assert task.status == "pending" and task.lease_owner is None  # its lease released
    assert len(calls.calls) == 1  # the cap stopped the second call


async def test_each_variant_has_its_kind() -> None:
    kinds = {Completed: "completed", Failed: "failed", Waiting: "waiting", Limited: "limited"}
    made = [Completed(None, None, Writes(), None), Failed("e"),
            Waiting("a1", "t"), Limited("cap")]
    assert [o.kind for o in made] == [kinds[type(o)] for o in made]
    with pytest.raises(AttributeError):
        made[1].error = "changed"  # type: ignore[misc]  # frozen
