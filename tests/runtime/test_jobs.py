"""The coordinator's jobs: a job runs the tasks claimed as its last one completed, back to
back, with per-role counts, cancellation and wake-ups following the task it runs now."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from orchestra import (
    Coordinator,
    FunctionModel,
    ModelRequest,
    NewHandoff,
    NewTask,
    Pipeline,
    Role,
    SQLiteBlackboard,
)
from orchestra.coordinator.jobs import Jobs


class Draft(BaseModel):
    text: str


class Writer(Role[Any, Draft]):
    """You write a draft as JSON {"text": ...}."""

    recall = False


class Editor(Role[Draft, Draft]):
    """You edit a draft, as JSON {"text": ...}."""

    recall = False


async def test_a_task_claimed_as_the_last_completed_runs_in_the_same_job(
        tmp_path: Path) -> None:
    seen: list[tuple[str, asyncio.Task[Any] | None, int, int]] = []
    coord: Coordinator | None = None

    def answer(req: ModelRequest) -> str:
        role = "writer" if "write" in req.messages[0].content else "editor"
        assert coord is not None
        seen.append((role, asyncio.current_task(), coord.jobs.busy("writer"),
                     coord.jobs.busy("editor")))
        return '{"text": "hi"}'

    pipe = Pipeline("chain", roles=[Writer(), Editor()],
                    start=lambda inp: [NewTask("writer", {})],
                    routes={Writer: lambda out, task, w: w.handoffs.append(
                        NewHandoff("editor", out.model_dump()))},
                    model=FunctionModel(answer))
    store = await SQLiteBlackboard.open(tmp_path / "o.db")
    try:
        coord = Coordinator(store, pipe)
        run = await asyncio.wait_for(coord.run({}), 30)
        assert run.status == "completed"
        assert [t.status for t in await store.list_tasks(run.id)] == ["completed"] * 2
    finally:
        await store.close()
    (r1, job1, w1, e1), (r2, job2, w2, e2) = seen
    assert (r1, r2) == ("writer", "editor")
    assert job1 is job2  # no new asyncio task for the editor's task
    assert (w1, e1, w2, e2) == (1, 0, 0, 1)  # the job counts as the role it runs now
    assert coord.jobs.total == 0 and not coord.jobs.has(run.id)


async def test_a_handed_over_job_is_counted_and_cancelled_as_its_new_task() -> None:
    jobs = Jobs()
    gate = asyncio.Event()
    jobs.start("r", "t1", "writer", gate.wait())  # type: ignore[arg-type]
    jobs.hand_over("r", "t1", "t2", "editor")
    assert (jobs.busy("writer"), jobs.busy("editor"), jobs.total) == (0, 1, 1)
    jobs.cancel("r", "t1")  # the task it ran before: nothing to cancel
    await asyncio.sleep(0)
    (job,) = jobs.of_run("r")
    assert not job.done()
    jobs.cancel("r", "t2")
    await asyncio.gather(job, return_exceptions=True)
    assert job.cancelled()
    await asyncio.sleep(0)  # the done callback
    assert (jobs.busy("editor"), jobs.total, jobs.has("r")) == (0, 0, False)


async def test_the_run_loop_wakes_when_its_last_job_ends_not_before() -> None:
    jobs = Jobs()
    gates = [asyncio.Event(), asyncio.Event()]
    for i, gate in enumerate(gates):
        jobs.start("r", f"t{i}", "writer", gate.wait())  # type: ignore[arg-type]
    waiter = asyncio.create_task(jobs.wait("r", 30))
    await asyncio.sleep(0)
    gates[0].set()
    for _ in range(5):
        await asyncio.sleep(0)
    assert jobs.has("r") and not waiter.done()  # a job left: the loop sleeps on
    gates[1].set()
    assert await asyncio.wait_for(waiter, 5) is True
    assert not jobs.take_refill("r")  # woken to see the run is idle, not to claim


async def test_a_run_whose_jobs_move_on_is_not_polled_an_idle_one_is() -> None:
    jobs = Jobs()
    gates = [asyncio.Event(), asyncio.Event()]
    jobs.start("r", "t0", "writer", gates[0].wait())  # type: ignore[arg-type]
    jobs.start("r", "t1", "writer", gates[1].wait())  # type: ignore[arg-type]
    waiter = asyncio.create_task(jobs.wait("r", 0.05))
    await asyncio.sleep(0)
    jobs.hand_over("r", "t1", "t2", "editor")  # a task done, the job on to the next one
    assert await waiter is True  # timed out, but work flows: no poll of the store
    gates[0].set()  # a job ends, another still runs
    assert await jobs.wait("r", 0.05) is True
    assert await jobs.wait("r", 0.05) is False  # nothing moved: time to look for work
    gates[1].set()
    await asyncio.gather(*jobs.of_run("r"))
