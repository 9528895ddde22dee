"""The orchestra side: the workload as three roles chained by routes on one store.

Each model call is one task of its role (one durable step, journaled with its
messages and event before the next task is claimed). Each role is one agent per
run whose whole history (``KeepAll``) is sent with every call, as the workload
asks. Durability: ``default`` (WAL, ``synchronous=NORMAL``: survives a killed
process) and ``full`` (WAL, ``synchronous=FULL``: fsync per commit).

S4 child: ``python -m benchmarks.sides.orchestra_side s4-child ...`` (see benchmarks.crash).
"""

# ruff: noqa: E402  (the S4 resume timing needs a clock reading before the imports)
from __future__ import annotations

import time

T_MODULE_START = time.monotonic()

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from benchmarks import crash, measure
from benchmarks.crash import ChildArgs, KillPoint
from benchmarks.workload import (
    MODULES,
    FakeModel,
    Message,
    architect_task,
    build_request,
    check_final_state,
    s3_task,
    work_task,
)
from orchestra import (
    Coordinator,
    CoordinatorSettings,
    ModelRequest,
    ModelResponse,
    NewHandoff,
    NewTask,
    Pipeline,
    Role,
    SQLiteBlackboard,
    Task,
)
from orchestra.store import Writes

NAME = "orchestra"
SCENARIOS = frozenset({"S1", "S2", "S3", "S4"})
MAX_REPS: dict[str, int] = {}
SETTINGS = {"default": "normal", "full": "full"}


def durabilities(scenario: str) -> list[str]:
    return ["default", "full"]


class PlanReply(BaseModel):
    modules: list[str]
    text: str


class WorkReply(BaseModel):
    module: str
    version: int
    text: str
    approved: bool | None = None


class S3Reply(BaseModel):
    turn: int
    text: str


class WorkRole(Role):
    """Shared rendering: the task input is the workload task; the message is its request."""

    instructions = "x"

    def render_task(self, task_input: Any) -> str:
        return str(build_request(task_input)["content"])


class Architect(WorkRole):
    """You plan the modules."""

    output = PlanReply
    recall = False
    concurrency = 10_000


class Coder(WorkRole):
    """You write one module."""

    output = WorkReply
    recall = False
    concurrency = 10_000


class Reviewer(WorkRole):
    """You review one module."""

    output = WorkReply
    recall = False
    concurrency = 10_000


class Chatter(WorkRole):
    """You talk for many turns."""

    name = "architect"
    output = S3Reply
    recall = False


class _History(Sequence[Message]):
    """The request's history (system prompt dropped) in the workload's dict shape,
    converted message by message on access: the fake model reads only the last one,
    so a long history costs no per-call copy (as LangGraph passes its state list)."""

    def __init__(self, messages: Sequence[Any]) -> None:
        self._messages = messages

    def __len__(self) -> int:
        return len(self._messages) - 1

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        m = self._messages[i] if i < 0 else self._messages[i + 1]
        return {"role": m.role, "content": m.content}


class FakeAdapter:
    """orchestra's Model interface over the workload's FakeModel (JSON text replies)."""

    def __init__(self, fake: FakeModel, on_call: Any = None) -> None:
        self.fake = fake
        self.name = "fake"
        self.on_call = on_call

    async def request(self, request: ModelRequest) -> ModelResponse:
        if self.on_call is not None:
            self.on_call()
        reply = await self.fake.complete(_History(request.messages))
        return ModelResponse(text=json.dumps({k: v for k, v in reply.items()
                                              if k not in ("role", "agent")}))


def _next(out: WorkReply | PlanReply, task: Task, writes: Writes) -> None:
    t = task.input
    if task.role == "architect":
        nxt = work_task("coder", out.modules[0], 1)  # type: ignore[union-attr]
    elif task.role == "coder":
        nxt = work_task("reviewer", t["module"], t["version"])
    elif not out.approved:  # type: ignore[union-attr]
        nxt = work_task("coder", t["module"], t["version"] + 1)
    else:
        i = MODULES.index(t["module"])
        if i + 1 == len(MODULES):
            return
        nxt = work_task("coder", MODULES[i + 1], 1)
    writes.handoffs.append(NewHandoff(nxt["role"], nxt))


def pipeline(model: FakeAdapter, ref: str | None = None) -> Pipeline:
    """The workload's pipeline; ``ref`` names a factory that rebuilds it in another
    process (``orchestra worker``: see ``benchmarks.s2_workers``)."""
    return Pipeline("bench", roles=[Architect(), Coder(), Reviewer()],
                    start=lambda inp: [NewTask("architect", architect_task())],
                    routes={r: _next for r in ("architect", "coder", "reviewer")},
                    model=model, ref=ref)


async def check_run(store: SQLiteBlackboard, run_id: str) -> None:
    """Raise unless the run's agents hold the workload's final state (2 / 16 / 16
    messages, every module approved)."""
    histories: dict[str, list[Message]] = {}
    approved: dict[str, bool] = {}
    for role in ("architect", "coder", "reviewer"):
        msgs = await store.get_messages(f"{run_id}/{role}")
        histories[role] = [{"role": "user", "content": m.content} if m.role == "user" else
                           {"role": "assistant", **json.loads(m.content)} for m in msgs]
    for m in histories["reviewer"]:
        if m["role"] == "assistant":
            approved[m["module"]] = bool(m["approved"])
    check_final_state(histories, approved)


def _settings() -> CoordinatorSettings:
    return CoordinatorSettings(concurrency=100_000)


async def _pragmas(durability: str) -> dict[str, str]:
    return {"journal_mode": "WAL", "synchronous": "NORMAL" if durability == "default"
            else "FULL"}


async def _pipelines(n: int, durability: str, db_path: Path, latency: float,
                     concurrent: bool) -> measure.Metrics:
    fake = FakeModel(latency=latency)
    store = await SQLiteBlackboard.open(db_path, durability=SETTINGS[durability])  # type: ignore[arg-type]
    coord = Coordinator(store, pipeline(FakeAdapter(fake)), settings=_settings())
    runs: list[str] = []

    async def run_one(i: int) -> None:
        run = await coord.run({"i": i})
        assert run.status == "completed", run.error
        runs.append(run.id)

    try:
        if concurrent:
            metrics = await measure.concurrent(run_one, n, latency)
        else:
            metrics = await measure.sequential(run_one, n)
        for run_id in runs:
            await check_run(store, run_id)
    finally:
        await store.close()
    return metrics | await _pragmas(durability)


async def s1(n: int, durability: str, db_path: Path) -> measure.Metrics:
    return await _pipelines(n, durability, db_path, 0.0, concurrent=False)


async def s2(n: int, durability: str, db_path: Path) -> measure.Metrics:
    return await _pipelines(n, durability, db_path, measure.S2_LATENCY, concurrent=True)


async def s3(turns: int, durability: str, db_path: Path) -> measure.Metrics:
    """One agent, ``turns`` tasks in one run; each turn's task is created by the last."""
    fake = FakeModel()
    marks = measure.s3_marks(turns)
    sizes: dict[int, dict[str, int]] = {}

    def at_call() -> None:  # call k+1 starts after turn k committed
        done = len(fake.entered_at)
        if done in marks:
            sizes[done] = measure.sqlite_sizes(db_path)

    def route(task: Task, out: S3Reply, writes: Writes) -> None:
        if out.turn < turns:
            writes.handoffs.append(NewHandoff("architect", s3_task(out.turn + 1)))

    pipe = Pipeline("s3", roles=[Chatter()], start=lambda _: [NewTask("architect", s3_task(1))],
                    routes={"architect": lambda out, task, w: route(task, out, w)},
                    model=FakeAdapter(fake, at_call))
    store = await SQLiteBlackboard.open(db_path, durability=SETTINGS[durability])  # type: ignore[arg-type]
    try:
        run = await Coordinator(store, pipe, settings=_settings()).run({})
        end = time.monotonic()
        assert run.status == "completed", run.error
        sizes[turns] = measure.sqlite_sizes(db_path)
        msgs = await store.get_messages(f"{run.id}/architect")
        assert len(msgs) == 2 * turns, len(msgs)
    finally:
        await store.close()
    durations = measure.turn_durations(fake.entered_at, end)
    return measure.s3_metrics(durations, sizes) | await _pragmas(durability)


# Taken after this module's top-level code, not just its import statements: defining
# the roles and their pydantic output models is loading the user's pipeline module
# (pydantic builds its schema machinery on the first model class, ~0.1 s), the same
# as importing it; "framework work" is then opening the store and resuming the run.
T_IMPORTED = time.monotonic()


def s4_trial(kill_point: KillPoint, durability: str, workdir: Path) -> measure.Metrics:
    return crash.crash_trial("benchmarks.sides.orchestra_side", kill_point, durability, workdir)


async def _s4_child(args: ChildArgs, model: FakeModel) -> dict[str, str]:
    store = await SQLiteBlackboard.open(args.db, durability=SETTINGS[args.durability])  # type: ignore[arg-type]
    try:
        coord = Coordinator(store, pipeline(FakeAdapter(model)), settings=_settings())
        phase: Literal["run", "resume"] = args.phase
        run = await (coord.run({}, run_id="s4") if phase == "run" else coord.resume("s4"))
        assert run.status == "completed", run.error
        await check_run(store, "s4")
    finally:
        await store.close()
    return await _pragmas(args.durability)


def main(argv: Sequence[str]) -> None:
    if not argv or argv[0] != "s4-child":
        raise SystemExit("usage: python -m benchmarks.sides.orchestra_side s4-child --phase ...")
    crash.child_main(argv[1:], _s4_child, T_MODULE_START, T_IMPORTED)


if __name__ == "__main__":
    main(sys.argv[1:])
