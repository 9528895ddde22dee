"""Property: under many concurrent writers, each run's event seqs are 1..n, in order,
and every state change has exactly its event (and failed writes leave none)."""

from __future__ import annotations

import asyncio
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from store_helpers import query

from orchestra._types import Message
from orchestra.store import (
    Lease,
    NewHandoff,
    NewNote,
    NewTask,
    SQLiteBlackboard,
    StepResult,
    Writes,
)

RUNS = 3
op_kinds = st.sampled_from(["note", "plan", "handoff", "task", "event", "work", "status",
                            "bad"])
ops = st.lists(st.tuples(op_kinds, st.integers(0, RUNS - 1)), min_size=1, max_size=60)


async def apply(store: SQLiteBlackboard, run_id: str, kind: str, n: int) -> Any:
    if kind == "note":
        return await store.post_note(run_id, "a", NewNote(f"note {n}", ("t",)))
    if kind == "plan":
        return await store.post_plan(run_id, "a", {"n": n})
    if kind == "handoff":
        return await store.post_handoff(run_id, "a", NewHandoff("coder", {"n": n}))
    if kind == "task":
        return await store.add_tasks(run_id, [NewTask("coder", n), NewTask("reviewer", n)])
    if kind == "event":
        return await store.append_event(run_id, "custom", {"n": n})
    if kind == "status":
        return await store.set_run_status(run_id, ("running", "waiting", "pending")[n % 3])
    if kind == "bad":  # fails inside its transaction, after writing a task
        return await store.add_tasks(run_id, [NewTask("coder", n), NewTask("coder", {1, 2})])
    task = await store.claim_task(f"w{n}", run_id=run_id)
    if task is None:
        return None
    lease = Lease(f"w{n}", task.attempt)
    agent = f"{run_id}/{task.role}"
    await store.start_step(task.id, 0, 1, "model", "m", "d", lease)
    await store.complete_step(StepResult(task.id, 0, 1, "model", "m", "d", output=n), lease,
                              agent_id=agent,
                              writes=Writes(messages=[Message("user", "q"),
                                                      Message("assistant", "a")]))
    return await store.complete_task(task.id, lease, n, agent_id=agent)


def check_run(path: Path, run_id: str) -> None:
    seqs = [r[0] for r in query(path, "SELECT seq FROM events WHERE run_id = ? ORDER BY seq",
                                run_id)]
    assert seqs == list(range(1, len(seqs) + 1))
    assert query(path, "SELECT last_seq FROM runs WHERE id = ?", run_id) == [(len(seqs),)]
    kinds = Counter(r[0] for r in query(path, "SELECT kind FROM events WHERE run_id = ?", run_id))

    def count(sql: str) -> int:
        return int(query(path, sql, run_id)[0][0])

    # a handoff's task is announced by its handoff.posted event
    assert kinds["task.created"] + kinds["handoff.posted"] == count(
        "SELECT COUNT(*) FROM tasks WHERE run_id = ?")
    assert kinds["note.posted"] == count("SELECT COUNT(*) FROM notes WHERE run_id = ?")
    assert kinds["plan.posted"] == count("SELECT COUNT(*) FROM plans WHERE run_id = ?")
    assert kinds["handoff.posted"] == count("SELECT COUNT(*) FROM handoffs WHERE run_id = ?")
    assert kinds["task.claimed"] == count("SELECT COALESCE(SUM(attempt), 0) FROM tasks "
                                          "WHERE run_id = ?")
    assert kinds["task.completed"] == count("SELECT COUNT(*) FROM tasks WHERE run_id = ? "
                                            "AND status = 'completed'")
    steps = count("SELECT COUNT(*) FROM steps WHERE task_id IN "
                  "(SELECT id FROM tasks WHERE run_id = ?)")
    model_steps = count("SELECT COUNT(*) FROM steps WHERE kind = 'model' AND task_id IN "
                        "(SELECT id FROM tasks WHERE run_id = ?)")
    assert kinds["step.completed"] == steps
    assert kinds["step.started"] == steps - model_steps  # model starts carry no event
    assert count("SELECT COUNT(*) FROM messages WHERE agent_id IN "
                 "(SELECT id FROM agents WHERE run_id = ?)") == 2 * steps


async def scenario(path: Path, plan: list[tuple[str, int]]) -> None:
    store = await SQLiteBlackboard.open(path)
    run_ids = [(await store.create_run("p", {}, tasks=[NewTask("coder", 0)])).id
               for _ in range(RUNS)]
    results = await asyncio.gather(*(apply(store, run_ids[r], kind, n)
                                     for n, (kind, r) in enumerate(plan)),
                                   return_exceptions=True)
    for (kind, _), result in zip(plan, results, strict=True):
        assert not isinstance(result, BaseException) or kind == "bad", result
    await store.close()
    for run_id in run_ids:
        check_run(path, run_id)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops)
def test_event_seqs_are_gap_free_under_concurrent_writers(plan: list[tuple[str, int]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(scenario(Path(tmp) / "board.db", plan))
