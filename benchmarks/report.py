"""Turn the measurement records into medians with min-max and a markdown report."""

from __future__ import annotations

import datetime
import os
import platform
import sqlite3
import statistics
from collections.abc import Iterable, Sequence
from importlib import metadata
from typing import Any

Record = dict[str, Any]

# (metric key, column title, digits); S3 size columns are added per mark.
COLUMNS: dict[str, list[tuple[str, str, int]]] = {
    "S1": [
        ("ms_per_step", "ms/step", 3),
        ("pipelines_per_s", "pipelines/s", 1),
        ("wall_s", "wall s", 3),
        ("cpu_s", "CPU s", 3),
    ],
    "S2": [
        ("makespan_over_ideal", "makespan/0.85 s", 2),
        ("makespan_s", "makespan s", 2),
        ("p50_latency_s", "p50 latency s", 2),
        ("max_latency_s", "max latency s", 2),
        ("cpu_s", "CPU s", 2),
    ],
    "S3": [("ms_per_turn_2_51", "ms/turn 2-51", 2), ("ms_per_turn_last50", "ms/turn last 50", 2)],
    "S4": [
        ("duplicates", "duplicates", 0),
        ("interpreter_s", "interpreter s", 3),
        ("imports_s", "imports s", 2),
        ("framework_s", "framework s", 3),
        ("resume_total_s", "resume total s", 2),
    ],
}
HEADLINE = {"S1": "ms_per_step", "S2": "makespan_over_ideal"}
TITLES = {
    "S1": "S1 overhead (L = 0, sequential pipelines)",
    "S2": "S2 concurrency (L = 50 ms, pipelines at once)",
    "S3": "S3 history growth (one agent, one run)",
    "S4": "S4 crash resume (L = 50 ms, SIGKILL around call 9)",
}


def group(records: Iterable[Record]) -> dict[tuple[str, str, str, str], list[Record]]:
    """Records by (scenario, side, durability, kill point), in first-seen order."""
    groups: dict[tuple[str, str, str, str], list[Record]] = {}
    for r in records:
        key = (r["scenario"], r["side"], r["durability"], r.get("kill_point", ""))
        groups.setdefault(key, []).append(r)
    return groups


def summary(values: Sequence[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def cell(values: Sequence[float], digits: int) -> str:
    if not values:
        return "-"
    s = summary(values)
    text = f"{s['median']:.{digits}f}"
    if len(values) > 1 and s["min"] != s["max"]:
        text += f" ({s['min']:.{digits}f}-{s['max']:.{digits}f})"
    return text


def _values(rows: list[Record], key: str) -> list[float]:
    return [float(r[key]) for r in rows if isinstance(r.get(key), int | float)]


def _pragmas(rows: list[Record]) -> str:
    pairs = sorted(
        {(str(r.get("journal_mode", "-")), str(r.get("synchronous", "-"))) for r in rows}
    )
    return ", ".join("-" if p == ("-", "-") else f"{p[0]}/{p[1]}" for p in pairs)


def scenario_table(scenario: str, groups: dict[tuple[str, str, str, str], list[Record]]) -> str:
    keys = [k for k in groups if k[0] == scenario]
    if not keys:
        return ""
    columns = list(COLUMNS[scenario])
    if scenario == "S3":
        marks = sorted({int(m.rsplit("_", 1)[1]) for k in keys for r in groups[k]
                        for m in r if m.startswith("logical_mb_at_")})  # fmt: skip
        columns = (
            [(f"logical_mb_at_{m}", f"MB @{m} (logical)", 1) for m in marks]
            + [(f"disk_mb_at_{m}", f"MB @{m} (disk)", 1) for m in marks]
            + columns
        )
    head = ["side", "durability"] + (["kill point"] if scenario == "S4" else [])
    head += ["journal/synchronous", "n"] + [title for _, title, _ in columns]
    baseline_key = HEADLINE.get(scenario)
    baseline = _values(groups.get((scenario, "langgraph", "async", ""), []), baseline_key or "")
    if baseline_key and baseline:
        head.append("x LangGraph async")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for key in keys:
        rows = groups[key]
        row = [key[1], key[2]] + ([key[3]] if scenario == "S4" else [])
        row += [_pragmas(rows), str(len(rows))]
        row += [cell(_values(rows, metric), digits) for metric, _, digits in columns]
        if scenario == "S4":
            row[-len(columns)] += " [" + ",".join(str(r["duplicates"]) for r in rows) + "]"
        if baseline_key and baseline:
            ratio = statistics.median(_values(rows, baseline_key)) / statistics.median(baseline)
            row.append(f"{ratio:.2f}")
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def environment() -> dict[str, Any]:
    return {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.platform()}",
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "langgraph": _version("langgraph"),
        "langgraph-checkpoint-sqlite": _version("langgraph-checkpoint-sqlite"),
        "orchestra": _version("orchestra-agents"),
    }


def markdown(records: list[Record], env: dict[str, Any], notes: Sequence[str]) -> str:
    groups = group(records)
    out = ["# Benchmark results", ""]
    out += [f"- **{k}**: {v}" for k, v in env.items()]
    out += ["", "Cells: median (min-max) over the n repetitions (S4: trials); the workload is",
            "shared/bench/WORKLOAD.md. `none` = no persistence (floor, or LangGraph without a",
            "checkpointer). S3 times a turn from one turn's commit to the next. S4 duplicates",
            "lists every trial in brackets.", ""]  # fmt: skip
    out += [f"- {note}" for note in notes]
    for scenario in ("S1", "S2", "S3", "S4"):
        table = scenario_table(scenario, groups)
        if table:
            out += ["", f"## {TITLES[scenario]}", "", table]
    return "\n".join(out) + "\n"
