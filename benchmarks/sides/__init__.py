"""What a side of the benchmark is, and how the harness finds the sides.

A side is a module (``benchmarks/<name>_side.py``) with these names:

``NAME: str``
    Shown in the tables, e.g. ``"langgraph"``.
``SCENARIOS: frozenset[str]``
    The scenarios it implements, among ``{"S1", "S2", "S3", "S4"}``.
``MAX_REPS: dict[str, int]``
    Optional caps on repetitions per scenario (e.g. ``{"S3": 1}``); ``{}`` for none.
``durabilities(scenario: str) -> list[str]``
    The settings each scenario runs at, e.g. ``["async", "sync"]`` for LangGraph or
    ``["default", "full"]`` for orchestra. The table shows it with the journal mode
    and ``synchronous`` pragma the side reports.
``async def s1(n: int, durability: str, db_path: Path) -> dict``
    S1 on a fresh DB at ``db_path``: warm up with 5 pipelines, then ``n`` one after
    another, L = 0. Use ``measure.sequential``; return its dict (``pipelines``,
    ``steps``, ``wall_s``, ``cpu_s``, ``pipelines_per_s``, ``ms_per_step``) plus
    ``journal_mode`` and ``synchronous`` (strings, as in effect on the connection).
``async def s2(n: int, durability: str, db_path: Path) -> dict``
    S2: L = 50 ms, warm-up, then ``n`` pipelines at once on the running loop and one
    DB. Use ``measure.concurrent``; return its dict (``makespan_s``, ``ideal_s``,
    ``makespan_over_ideal``, ``p50_latency_s``, ``max_latency_s``, ``cpu_s``) plus
    ``journal_mode``, ``synchronous``.
``async def s3(turns: int, durability: str, db_path: Path) -> dict``
    S3: one agent, ``turns`` turns in one run, committed every turn; read the sizes
    with ``measure.sqlite_sizes`` after the turns in ``measure.s3_marks(turns)`` and
    return ``measure.s3_metrics(durations, sizes)``, where ``durations[k]`` is turn
    k's seconds from the commit of turn k - 1 to its own (``measure.turn_durations``):
    ``ms_per_turn_2_51``, ``ms_per_turn_last50``, ``logical_mb_at_<mark>``,
    ``disk_mb_at_<mark>``, plus ``journal_mode``, ``synchronous``.
``def s4_trial(kill_point: str, durability: str, workdir: Path) -> dict``
    S4: one crash-and-resume trial in the empty directory ``workdir``. Use
    ``crash.crash_trial("benchmarks.<name>_side", kill_point, durability, workdir)``,
    whose dict has ``kill_point``, ``duplicates``, ``calls_killed_process``,
    ``calls_resume_process``, ``interpreter_s``, ``imports_s``, ``framework_s``,
    ``resume_total_s``, ``journal_mode``, ``synchronous``. The module's ``__main__``
    handles ``s4-child ...`` with ``crash.child_main(argv, body, T_MODULE_START,
    T_IMPORTED)``: the two clock readings are taken at the module's first line and
    after its imports; ``async def body(args: crash.ChildArgs, model: FakeModel) ->
    dict[str, str]`` starts (``args.phase == "run"``) or resumes (``"resume"``) the one
    pipeline on ``args.db`` at ``args.durability`` with ``model``, checks the final
    state and returns the ``journal_mode`` and ``synchronous`` in effect.

Every pipeline must be checked with ``workload.check_final_state``.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

KNOWN_SIDES: dict[str, str] = {
    "floor": "benchmarks.sides.floor_side",
    "langgraph": "benchmarks.sides.langgraph_side",
    "orchestra": "benchmarks.sides.orchestra_side",
}


class Side(Protocol):
    NAME: str
    SCENARIOS: frozenset[str]
    MAX_REPS: dict[str, int]

    def durabilities(self, scenario: str) -> list[str]: ...

    async def s1(self, n: int, durability: str, db_path: Path) -> dict[str, Any]: ...

    async def s2(self, n: int, durability: str, db_path: Path) -> dict[str, Any]: ...

    async def s3(self, turns: int, durability: str, db_path: Path) -> dict[str, Any]: ...

    def s4_trial(self, kill_point: str, durability: str, workdir: Path) -> dict[str, Any]: ...


def load_sides(names: list[str]) -> list[ModuleType]:
    """Import the named sides; a side whose module or framework is missing is skipped
    with a message on stderr."""
    sides: list[ModuleType] = []
    for name in names:
        module_name = KNOWN_SIDES.get(name)
        if module_name is None:
            raise SystemExit(f"unknown side {name!r}; known: {', '.join(KNOWN_SIDES)}")
        try:
            sides.append(importlib.import_module(module_name))
        except ModuleNotFoundError as exc:
            print(f"skipping side {name!r}: cannot import {exc.name}", file=sys.stderr)
    return sides
