"""The LangGraph side: the workload as a ``StateGraph`` checkpointed by
``AsyncSqliteSaver`` (``langgraph-checkpoint-sqlite``).

One thread_id per pipeline (= one durable run). Each node makes exactly one model call,
so each super-step is one step, and the saver writes a checkpoint per super-step.
The three agents' histories are state channels with an ``operator.add`` reducer.

Durability settings: ``async`` (LangGraph's default: the checkpoint of a step is
written in the background while the next step runs) and ``sync`` (the step's
checkpoint is committed before the next step starts), passed as
``ainvoke(..., durability=...)`` (langgraph 1.x, ``Pregel.ainvoke``). S1 also runs with
``none``: no checkpointer at all. The saver runs ``PRAGMA journal_mode=WAL`` in its
``setup()`` and leaves ``synchronous`` at SQLite's default; both are read back from the
saver's connection and reported.

S4 child: ``python -m benchmarks.sides.langgraph_side s4-child ...`` (see benchmarks.crash).
"""

# ruff: noqa: E402  (the S4 resume timing needs a clock reading before the imports)
from __future__ import annotations

import time

T_MODULE_START = time.monotonic()

import operator
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any, TypedDict, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import ChannelVersions, Checkpoint, CheckpointMetadata
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Durability

from benchmarks import crash, measure
from benchmarks.crash import ChildArgs, KillPoint
from benchmarks.workload import (
    CALLS_PER_PIPELINE,
    MESSAGES_SENT_PER_PIPELINE,
    FakeModel,
    Message,
    Role,
    Task,
    architect_task,
    build_request,
    check_final_state,
    next_task,
    s3_task,
)

T_IMPORTED = time.monotonic()

NAME = "langgraph"
SCENARIOS = frozenset({"S1", "S2", "S3", "S4"})
MAX_REPS = {"S3": 1}
"""S3 costs ~10 s and ~550 MB per setting here (quadratic growth): one repetition."""


def durabilities(scenario: str) -> list[str]:
    return ["async", "sync", "none"] if scenario == "S1" else ["async", "sync"]


class PipelineState(TypedDict):
    architect: Annotated[list[Message], operator.add]
    coder: Annotated[list[Message], operator.add]
    reviewer: Annotated[list[Message], operator.add]
    approved: dict[str, bool]
    task: Task | None


class ChatState(TypedDict):
    history: Annotated[list[Message], operator.add]
    turn: int
    target: int


def initial_state() -> PipelineState:
    return {"architect": [], "coder": [], "reviewer": [], "approved": {}, "task": architect_task()}


def pipeline_graph(model: FakeModel) -> StateGraph[Any]:
    """architect -> coder <-> reviewer, routed by ``workload.next_task``."""

    def agent(role: Role) -> Any:
        async def node(state: PipelineState) -> dict[str, Any]:
            task = state["task"]
            assert task is not None and task["role"] == role, task
            request = build_request(task)
            reply = await model.complete([*state[role], request])
            update: dict[str, Any] = {role: [request, reply], "task": next_task(task, reply)}
            if role == "reviewer":
                update["approved"] = {**state["approved"], reply["module"]: reply["approved"]}
            return update

        return node

    def route(state: PipelineState) -> str:
        task = state["task"]
        return END if task is None else task["role"]

    builder = StateGraph(PipelineState)
    for role in ("architect", "coder", "reviewer"):
        builder.add_node(role, agent(role))
        builder.add_conditional_edges(role, route, ["coder", "reviewer", END])
    builder.add_edge(START, "architect")
    return builder


def chat_graph(model: FakeModel) -> StateGraph[Any]:
    """S3: one architect node looping one turn per super-step until ``target``."""

    async def turn(state: ChatState) -> dict[str, Any]:
        t = state["turn"] + 1
        request = build_request(s3_task(t))
        reply = await model.complete([*state["history"], request])
        return {"history": [request, reply], "turn": t}

    def route(state: ChatState) -> str:
        return "architect" if state["turn"] < state["target"] else END

    builder = StateGraph(ChatState)
    builder.add_node("architect", turn)
    builder.add_edge(START, "architect")
    builder.add_conditional_edges("architect", route, ["architect", END])
    return builder


def check_pipeline(state: dict[str, Any]) -> None:
    histories = {role: state[role] for role in ("architect", "coder", "reviewer")}
    check_final_state(histories, state["approved"])


async def read_pragmas(saver: AsyncSqliteSaver) -> dict[str, str]:
    """The journal mode and ``synchronous`` setting in effect on the saver's connection."""
    async with saver.conn.execute("PRAGMA journal_mode") as cur:
        journal = (await cur.fetchone())[0]  # type: ignore[index]
    async with saver.conn.execute("PRAGMA synchronous") as cur:
        sync = (await cur.fetchone())[0]  # type: ignore[index]
    return {"journal_mode": str(journal).upper(), "synchronous": measure.synchronous_name(sync)}


class TurnTimedSaver(AsyncSqliteSaver):
    """S3 only: the saver, noting when the checkpoint of each chat turn is committed.

    With ``durability="async"`` LangGraph runs the next turns while earlier checkpoints
    are still being written (the backlog drains when ``ainvoke`` returns), so the model
    call times do not say when a turn became durable; these commit times do."""

    committed_at: dict[int, float]

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        out = await super().aput(config, checkpoint, metadata, new_versions)
        turn = checkpoint["channel_values"].get("turn")
        if metadata.get("source") == "loop" and isinstance(turn, int):
            self.committed_at[turn] = time.monotonic()
        return out


@asynccontextmanager
async def _saver(
    db_path: Path, cls: type[AsyncSqliteSaver] = AsyncSqliteSaver
) -> AsyncIterator[tuple[AsyncSqliteSaver, dict[str, str]]]:
    async with cls.from_conn_string(str(db_path)) as saver:
        await saver.setup()
        yield saver, await read_pragmas(saver)


def _durability(setting: str) -> Durability | None:
    """``none`` (no checkpointer) passes no durability; the others are LangGraph's."""
    if setting == "none":
        return None
    if setting not in ("sync", "async", "exit"):
        raise ValueError(f"unknown LangGraph durability {setting!r}")
    return cast(Durability, setting)


def _config(thread_id: str, recursion_limit: int = 25) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id}, "recursion_limit": recursion_limit}


async def _pipelines(
    n: int, durability: str, db_path: Path, latency: float, concurrent: bool
) -> measure.Metrics:
    model = FakeModel(latency=latency)
    finals: list[dict[str, Any]] = []

    async def measure_with(graph: CompiledStateGraph[Any]) -> measure.Metrics:
        mode = _durability(durability)

        async def run_one(i: int) -> None:
            config = _config(f"pipeline-{i}")
            finals.append(await graph.ainvoke(initial_state(), config, durability=mode))

        if concurrent:
            return await measure.concurrent(run_one, n, latency)
        return await measure.sequential(run_one, n)

    if durability == "none":
        metrics = await measure_with(pipeline_graph(model).compile())
        metrics |= {"journal_mode": "-", "synchronous": "-"}
    else:
        async with _saver(db_path) as (saver, pragmas):
            metrics = await measure_with(pipeline_graph(model).compile(checkpointer=saver))
            metrics |= pragmas
    for final in finals:
        check_pipeline(final)
    warmup = measure.S2_WARMUP if concurrent else measure.S1_WARMUP
    assert model.calls == CALLS_PER_PIPELINE * (n + warmup), model.calls
    assert model.messages_sent == MESSAGES_SENT_PER_PIPELINE * (n + warmup), "history not sent"
    return metrics


async def s1(n: int, durability: str, db_path: Path) -> measure.Metrics:
    """S1: L = 0, 5 warm-up pipelines then ``n`` sequential ones, one DB."""
    return await _pipelines(n, durability, db_path, 0.0, concurrent=False)


async def s2(n: int, durability: str, db_path: Path) -> measure.Metrics:
    """S2: L = 50 ms, warm-up, then ``n`` pipelines at once on this loop and one DB."""
    return await _pipelines(n, durability, db_path, measure.S2_LATENCY, concurrent=True)


async def s3(turns: int, durability: str, db_path: Path) -> measure.Metrics:
    """S3: one thread, ``turns`` turns of one agent, a checkpoint per turn.

    The thread is driven by one ``ainvoke`` per segment between size marks (e.g. turns
    1-100, 101-500, 501-1000) so sizes are read when every checkpoint of the segment is
    committed; each later segment adds one input checkpoint (< 0.5 % of the size).
    A turn lasts from the commit of the previous turn's checkpoint to the commit of its
    own (the first turn of a segment: from its model call)."""
    model = FakeModel()
    config, mode = _config("s3", turns + 10), _durability(durability)
    sizes: dict[int, dict[str, int]] = {}
    durations: list[float] = []
    async with _saver(db_path, TurnTimedSaver) as (saver, pragmas):
        assert isinstance(saver, TurnTimedSaver)
        saver.committed_at = {}
        graph = chat_graph(model).compile(checkpointer=saver)
        done = 0
        state: dict[str, Any] = {"history": [], "turn": 0}
        for mark in measure.s3_marks(turns):
            first = len(model.entered_at)
            inp = {**state, "target": mark} if done == 0 else {"target": mark}
            state = await graph.ainvoke(inp, config, durability=mode)
            commits = [saver.committed_at[t] for t in range(done + 1, mark + 1)]
            durations += measure.turn_durations(
                [model.entered_at[first], *commits[:-1]], commits[-1]
            )
            sizes[mark] = measure.sqlite_sizes(db_path)
            done = mark
        assert state["turn"] == turns and len(state["history"]) == 2 * turns, state["turn"]
    return measure.s3_metrics(durations, sizes) | pragmas


def s4_trial(kill_point: KillPoint, durability: str, workdir: Path) -> measure.Metrics:
    """S4: one crash-and-resume trial in ``workdir`` (two child processes)."""
    return crash.crash_trial("benchmarks.sides.langgraph_side", kill_point, durability, workdir)


async def _s4_child(args: ChildArgs, model: FakeModel) -> dict[str, str]:
    async with AsyncSqliteSaver.from_conn_string(str(args.db)) as saver:
        graph = pipeline_graph(model).compile(checkpointer=saver)
        inp = initial_state() if args.phase == "run" else None
        final = await graph.ainvoke(inp, _config("s4"), durability=_durability(args.durability))
        check_pipeline(final)
        return await read_pragmas(saver)


def main(argv: Sequence[str]) -> None:
    if not argv or argv[0] != "s4-child":
        raise SystemExit("usage: python -m benchmarks.sides.langgraph_side s4-child --phase ...")
    crash.child_main(argv[1:], _s4_child, T_MODULE_START, T_IMPORTED)


if __name__ == "__main__":
    main(sys.argv[1:])
