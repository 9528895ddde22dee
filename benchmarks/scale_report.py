"""What one pass of ``benchmarks.scale`` did, read back from the store afterwards.

Everything comes from the database, not from the driver's bookkeeping: the event log's
``task.claimed`` / ``task.completed`` events (owner, attempt, time on the database's
clock), the tasks' creation times, the journal, the runs' statuses and the database's
size. "Tasks run twice" are the tasks claimed more than once; "in flight at the kill"
are the tasks the killed worker had claimed and not completed when it was killed (its
owner id carries its pid). The two sets must be equal.
"""

from __future__ import annotations

import json
from typing import Any

import asyncpg


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def held(dsn: str) -> dict[int, set[str]]:
    """The tasks each worker process (by pid) holds now. Read just before the kill to
    pick the busiest worker (a run's chain stays with the worker that claimed its first
    task: a worker may hold none), and right after it, well before its leases expire:
    the driver's own view of "in flight at the kill"."""
    conn = await asyncpg.connect(dsn)
    try:
        rows = await conn.fetch("SELECT id, lease_owner FROM tasks WHERE status = 'running'")
    finally:
        await conn.close()
    by_pid: dict[int, set[str]] = {}
    for r in rows:  # owner ids are host:pid:random
        by_pid.setdefault(int(r["lease_owner"].split(":")[-2]), set()).add(r["id"])
    return by_pid


async def report(dsn: str, start: float, until: float, victim: int,
                 killed_at: float, restarted_at: float) -> dict[str, Any]:
    """The pass's figures (see the module docstring); ``start``..``until`` is the window
    throughput is measured over, ``victim`` the killed worker's pid."""
    conn = await asyncpg.connect(dsn)
    try:
        events = await conn.fetch("SELECT kind, data, at FROM events WHERE kind IN "
                                  "('task.claimed', 'task.completed', 'task.requeued')")
        tasks = {r["id"]: r for r in await conn.fetch(
            "SELECT id, created_at, from_agent FROM tasks")}
        steps = await conn.fetch("SELECT task_id, finished_at, attempts FROM steps "
                                 "WHERE status = 'completed'")
        runs: dict[str, int] = {r[0]: r[1] for r in await conn.fetch(
            "SELECT status, COUNT(*) FROM runs GROUP BY status")}
        gaps = await conn.fetchval("SELECT COUNT(*) FROM (SELECT run_id FROM events GROUP BY "
                                   "run_id HAVING MAX(seq) <> COUNT(*)) g")
        size = await conn.fetchval("SELECT pg_database_size(current_database())")
        xacts = await conn.fetchval("SELECT xact_commit + xact_rollback FROM pg_stat_database "
                                    "WHERE datname = current_database()")
    finally:
        await conn.close()
    claims: dict[str, list[tuple[float, str]]] = {}
    completed: dict[str, float] = {}
    requeued = 0
    for e in events:
        data = json.loads(e["data"])
        if e["kind"] == "task.claimed":
            claims.setdefault(data["task"], []).append((e["at"], data["owner"]))
        elif e["kind"] == "task.completed":
            completed[data["task"]] = e["at"]
        else:
            requeued += 1
    mark = f":{victim}:"
    in_flight = {t for t, cs in claims.items()
                 if any(mark in owner and at <= killed_at for at, owner in cs)
                 and completed.get(t, float("inf")) > killed_at}
    twice = {t for t, cs in claims.items() if len(cs) > 1}
    # ready -> first claimed: a handed-off task from its creation (a completing step
    # claims it in the same statement when it can: then 0); a run's first task from the
    # workers' start (how long N workers take to pick up every run)
    handed, first = [], []
    for t, row in tasks.items():
        if t in claims:
            claimed = min(at for at, _ in claims[t])
            if row["from_agent"] is None:
                first.append(claimed - max(row["created_at"], start))
            else:
                handed.append(claimed - row["created_at"])
    window = until - start
    done_in_window = sum(1 for at in completed.values() if start <= at <= until)
    steps_in_window = sum(1 for s in steps if start <= (s["finished_at"] or 0) <= until)
    return {
        "tasks_per_s": round(done_in_window / window, 1),
        "steps_per_s": round(steps_in_window / window, 1),
        "claim_latency_p50_ms": round(1000 * _percentile(handed, 0.5), 1),
        "claim_latency_p99_ms": round(1000 * _percentile(handed, 0.99), 1),
        "first_claim_p50_s": round(_percentile(first, 0.5), 2),
        "first_claim_p99_s": round(_percentile(first, 0.99), 2),
        "takeovers": requeued,
        "run_twice": len(twice),
        "in_flight_at_kill": len(in_flight),
        "run_twice_equals_in_flight": twice == in_flight,
        # worked on twice (a step started again): must be only tasks in flight at the kill
        "rerun_not_in_flight": len({s["task_id"] for s in steps if s["attempts"] > 1}
                                   - in_flight),
        "in_flight_taken_over": in_flight <= twice,
        "run_twice_not_in_flight": sorted(twice - in_flight)[:5],
        # of those, the ones whose journal shows a step started twice (a claim whose reply
        # the restart cut off was never worked on: claimed again after its lease, run once)
        "run_twice_not_in_flight_rerun": len((twice - in_flight) & {
            s["task_id"] for s in steps if s["attempts"] > 1}),
        "steps_to_restart": sum(1 for s in steps if (s["finished_at"] or 0) <= restarted_at),
        "pg_xacts_per_step": round(xacts / max(1, len(steps)), 1),
        "steps_replayed_or_rerun": sum(1 for s in steps if s["attempts"] > 1),
        "tasks": len(tasks),
        "tasks_completed": len(completed),
        "runs": sum(runs.values()),
        "runs_completed": runs.get("completed", 0),
        "runs_by_status": runs,
        "runs_with_seq_gaps": gaps,
        "store_mb": round(size / 1e6, 1),
        "store_kb_per_task": round(size / 1e3 / max(1, len(tasks)), 2),
    }
