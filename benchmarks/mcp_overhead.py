"""What journaling adds to an MCP tool call: the same no-op ``tools/call`` to the same
stdio server (the tests' own), through the bare ``mcp`` SDK session and through
orchestra's journaled path (the task's tool runner: schema check, approval gate,
``started`` written durably before sending, the result recorded after), interleaved,
medians of REPS; beside them, what journaling a Python tool's step costs alone (the part
both kinds of tool share).

``python -m benchmarks.mcp_overhead [CALLS] [REPS]``; the last line is JSON."""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import cast

from mcp.types import RequestParamsMeta

from orchestra import MCPServer, NewTask, Role, SQLiteBlackboard
from orchestra.mcp.hub import MCPHub, MCPSetup
from orchestra.models.base import ToolCall
from orchestra.runtime.journal import Journal, Outcome
from orchestra.runtime.mcp_tools import open_mcp_tools
from orchestra.runtime.tool_calls import ToolRunner
from orchestra.store.protocol import Lease
from orchestra.store.views import ReadOnlyBoard

SERVER = Path(__file__).resolve().parents[1] / "tests" / "mcp" / "effects_server.py"


class Bench(Role):
    """You call noop."""

    recall = False


Times = tuple[float, float]
"""Per call: wall-clock ms, and this process's CPU ms (the store's thread included)."""


async def _bare(hub: MCPHub, server: MCPServer, calls: int, name: str) -> Times:
    session = (await hub.connection(server)).session
    assert session is not None
    meta = cast(RequestParamsMeta, {"orchestra/idempotency_key": "k"})
    start, cpu = time.perf_counter(), time.process_time()
    for _ in range(calls):
        await session.call_tool(name, {}, meta=meta)
    return ((time.perf_counter() - start) / calls * 1000,
            (time.process_time() - cpu) / calls * 1000)


async def _journaled(store: SQLiteBlackboard, hub: MCPHub, server: MCPServer, calls: int,
                     name: str) -> Times:
    run = await store.create_run("bench", None, tasks=[NewTask("bench", None)])
    task = await store.claim_task("bench-owner", run_id=run.id)
    assert task is not None
    lease = Lease("bench-owner", task.attempt)
    journal = Journal(store, task, lease, "agent", [])
    role = type("Bench", (Bench,), {"mcp": [server], "__doc__": Bench.__doc__})()
    agent = f"{run.id}/bench"
    source = await open_mcp_tools(MCPSetup(hub), role, (), store=store, task=task,
                                  lease=lease, journal=journal, agent_id=agent)
    assert source is not None
    runner = ToolRunner(store=store, board=ReadOnlyBoard(store), task=task, lease=lease,
                        journal=journal, agent_id=agent, tools={}, default_timeout=60,
                        needs_approval=role.requires_approval, source=source)
    call = [ToolCall("c1", name, "{}")]
    start, cpu = time.perf_counter(), time.process_time()
    for _ in range(calls):
        (result,) = await runner.run_all(call)
        assert not result.is_error
    return ((time.perf_counter() - start) / calls * 1000,
            (time.process_time() - cpu) / calls * 1000)


async def _python_step(store: SQLiteBlackboard, calls: int) -> Times:
    """The journaling alone, as a Python tool's step has it (a durable start, then the
    outcome): what any tool step costs orchestra, whatever the tool."""
    run = await store.create_run("bench", None, tasks=[NewTask("bench", None)])
    task = await store.claim_task("bench-owner", run_id=run.id)
    assert task is not None
    journal = Journal(store, task, Lease("bench-owner", task.attempt), f"{run.id}/bench", [])

    async def noop() -> Outcome:
        return Outcome({"content": "ok", "is_error": False})

    start, cpu = time.perf_counter(), time.process_time()
    for _ in range(calls):
        await journal.run(journal.reserve(), "tool", "noop", "", noop)
    return ((time.perf_counter() - start) / calls * 1000,
            (time.process_time() - cpu) / calls * 1000)


TOOLS = {"noop": "read-only: its `started` record commits while the call is out",
         "touch": "side-effecting: its `started` record is durable before it is sent"}


async def main(calls: int = 300, reps: int = 5) -> None:
    server = MCPServer.stdio(sys.executable, [str(SERVER)], name="effects")
    hub = MCPHub()
    times: dict[str, list[Times]] = {f"{k}_{t}": [] for k in ("bare", "journaled")
                                     for t in TOOLS}
    times["python_step"] = []
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        store = await SQLiteBlackboard.open(Path(tmp) / "bench.db")
        try:
            for rep in range(reps + 1):  # the first round warms both paths up
                for name in TOOLS:
                    bare = await _bare(hub, server, calls if rep else 20, name)
                    journaled = await _journaled(store, hub, server, calls if rep else 20,
                                                 name)
                    if rep:
                        times[f"bare_{name}"].append(bare)
                        times[f"journaled_{name}"].append(journaled)
                python = await _python_step(store, calls if rep else 20)
                if rep:
                    times["python_step"].append(python)
        finally:
            await hub.aclose()
            await store.close()
    load = (load_before, os.getloadavg()[0])
    _report(times, calls, reps, load)


def _report(times: dict[str, list[Times]], calls: int, reps: int,
            load: tuple[float, float]) -> None:
    """Both sides and their difference per tool and clock, medians over the runs."""
    out: dict[str, object] = {"calls": calls, "reps": reps, "load_before": load[0],
                              "load_after": load[1]}
    print(f"MCP tools/call over stdio (the tests' own server), {calls} calls per run, "
          f"medians of {reps} runs (min-max); load average {load[0]:.2f} before, "
          f"{load[1]:.2f} after")
    print(f"{'tool':<6} {'clock':<5} {'bare SDK ms/call':>22} {'orchestra ms/call':>22} "
          f"{'overhead ms/call':>17}")
    for name in TOOLS:
        for i, clock in enumerate(("wall", "cpu")):
            bare_ms = [t[i] for t in times[f"bare_{name}"]]
            journaled_ms = [t[i] for t in times[f"journaled_{name}"]]
            b, j = statistics.median(bare_ms), statistics.median(journaled_ms)
            print(f"{name:<6} {clock:<5} {_cell(b, bare_ms):>22} {_cell(j, journaled_ms):>22} "
                  f"{j - b:>17.3f}")
            out |= {f"{name}_{clock}_bare_ms": round(b, 4),
                    f"{name}_{clock}_journaled_ms": round(j, 4),
                    f"{name}_{clock}_overhead_ms": round(j - b, 4)}
    for name, what in TOOLS.items():
        print(f"  {name}: {what}")
    steps = {clock: statistics.median(t[i] for t in times["python_step"])
             for i, clock in enumerate(("wall", "cpu"))}
    print(f"a Python tool step's journaling alone (start, then outcome): "
          f"{steps['wall']:.3f} ms wall, {steps['cpu']:.3f} ms cpu")
    out |= {f"python_step_{clock}_ms": round(ms, 4) for clock, ms in steps.items()}
    worst = max(float(out[f"{name}_wall_overhead_ms"]) for name in TOOLS)  # type: ignore[arg-type]
    print(f"goal: at most 1 ms of overhead per call (wall): "
          f"{'met' if worst <= 1.0 else 'NOT met'} (worst {worst:.3f} ms)")
    print(json.dumps(out))


def _cell(median: float, runs: list[float]) -> str:
    return f"{median:.3f} ({min(runs):.3f}-{max(runs):.3f})"


if __name__ == "__main__":
    asyncio.run(main(*(int(a) for a in sys.argv[1:])))
