"""A worker that hands in a result takes the work it routed in the same transaction.

``complete_task(..., claim=...)`` claims the run's older pending tasks first; capacity
left over claims the tasks the finishing task creates as they are inserted (no
pending row, no claim UPDATE). Handoffs are rows of their tasks (schema v3) and
still read back through the ``handoffs`` view.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest
from store_helpers import Claim, query

from orchestra._errors import LeaseLostError
from orchestra.store import (
    ClaimSpec,
    Lease,
    NewHandoff,
    NewTask,
    SQLiteBlackboard,
    Writes,
)
from orchestra.store.sqlite import schema


def _spec(run_id: str, **capacity: int) -> ClaimSpec:
    return ClaimSpec("worker-1", dict(capacity), sum(capacity.values()), run_id)


async def test_a_routed_task_is_claimed_as_it_is_created(store: SQLiteBlackboard,
                                                         claimed: Claim, db_path: Path) -> None:
    run, task, lease = await claimed()
    writes = Writes(handoffs=[NewHandoff("reviewer", {"v": 1}, note="please review")])
    nxt = await store.complete_task(
        task.id, lease, {"ok": True}, agent_id=f"{run.id}/coder", claim=_spec(run.id, reviewer=1),
        writes=writes)
    assert (await store.get_task(task.id)).status == "completed"
    (review,) = nxt
    assert (review.role, review.status, review.attempt, review.lease_owner) == (
        "reviewer", "running", 1, "worker-1")
    stored = await store.get_task(review.id)
    assert stored is not None and stored.status == "running" and stored.attempt == 1
    assert stored.lease_expires_at == pytest.approx(review.lease_expires_at)
    # the same story in the event log as a pending task claimed afterwards
    kinds = [e.kind for e in await store.events(run.id)]
    assert kinds[-3:] == ["handoff.posted", "task.completed", "task.claimed"]
    # the claim journals the first step's start: no row until the step ends
    assert query(db_path, "SELECT status FROM steps WHERE task_id = ?", review.id) == []
    (handoff,) = await store.get_handoffs(run.id)
    assert (handoff.to_role, handoff.payload, handoff.note, handoff.task_id) == (
        "reviewer", {"v": 1}, "please review", review.id)
    assert handoff.from_agent == f"{run.id}/coder"
    # the lease is real: the claimant completes it, anyone else is fenced off
    with pytest.raises(LeaseLostError):
        await store.complete_task(review.id, Lease("worker-2", 1), {}, agent_id=f"{run.id}/r")
    await store.complete_task(review.id, Lease("worker-1", 1), {"approved": True},
                              agent_id=f"{run.id}/reviewer")


async def test_the_runs_older_pending_tasks_are_claimed_first(store: SQLiteBlackboard) -> None:
    run = await store.create_run("p", {}, tasks=[NewTask("coder", {"n": 1})])
    task = await store.claim_task("worker-1", run_id=run.id)
    assert task is not None
    (older,) = await store.add_tasks(run.id, [NewTask("coder", {"n": 2})])
    writes = Writes(handoffs=[NewHandoff("coder", {"n": 3})])
    nxt = await store.complete_task(
        task.id, Lease("worker-1", task.attempt), {}, agent_id=f"{run.id}/coder",
        claim=_spec(run.id, coder=1), writes=writes)
    assert [t.id for t in nxt] == [older.id]
    routed = [t for t in await store.list_tasks(run.id) if t.input == {"n": 3}]
    assert [t.status for t in routed] == ["pending"]
    # with room for two, both: the older one first
    run2 = await store.create_run("p", {}, tasks=[NewTask("coder", {"n": 1})])
    task2 = await store.claim_task("worker-1", run_id=run2.id)
    assert task2 is not None
    (older2,) = await store.add_tasks(run2.id, [NewTask("coder", {"n": 2})])
    nxt2 = await store.complete_task(
        task2.id, Lease("worker-1", task2.attempt), {}, agent_id=f"{run2.id}/coder",
        claim=_spec(run2.id, coder=2), writes=Writes(handoffs=[NewHandoff("coder", {"n": 3})]))
    assert nxt2[0].id == older2.id
    assert [t.input for t in nxt2] == [{"n": 2}, {"n": 3}]
    assert all(t.status == "running" for t in nxt2)


async def test_a_delayed_task_or_a_role_without_room_stays_pending(store: SQLiteBlackboard,
                                                                   claimed: Claim) -> None:
    run, task, lease = await claimed()
    later = time.time() + 3600
    writes = Writes(tasks=[NewTask("coder", {"n": 2}, not_before=later),
                           NewTask("tester", {"n": 3}), NewTask("coder", {"n": 4})])
    nxt = await store.complete_task(
        task.id, lease, {}, agent_id=f"{run.id}/coder", claim=_spec(run.id, coder=1), writes=writes)
    assert [t.input for t in nxt] == [{"n": 4}]
    status = {t.input["n"]: t.status for t in await store.list_tasks(run.id)}
    assert status == {1: "completed", 2: "pending", 3: "pending", 4: "running"}


async def test_a_lost_lease_writes_and_claims_nothing(store: SQLiteBlackboard, claimed: Claim,
                                                      db_path: Path) -> None:
    run, task, lease = await claimed()
    before = query(db_path, "SELECT COUNT(*) FROM tasks")
    with pytest.raises(LeaseLostError):
        await store.complete_task(
            task.id, Lease("someone-else", lease.attempt), {}, agent_id=f"{run.id}/coder",
            claim=_spec(run.id, reviewer=1),
            writes=Writes(handoffs=[NewHandoff("reviewer", {"v": 1})]))
    assert query(db_path, "SELECT COUNT(*) FROM tasks") == before
    assert query(db_path, "SELECT COUNT(*) FROM handoffs") == [(0,)]


async def test_a_version_2_file_keeps_its_handoffs(tmp_path: Path) -> None:
    path = tmp_path / "v2.db"
    conn = sqlite3.connect(path, isolation_level=None)
    assert schema.migrate(conn, str(path), migrations=schema.MIGRATIONS[:2]) == 2
    conn.execute("INSERT INTO runs (id, pipeline, input, status, created_at, updated_at) "
                 "VALUES ('r', 'p', '{}', 'running', 0, 0)")
    for n, (hid, tid) in enumerate([("h1", "t1"), ("h2", "t2")]):
        conn.execute("INSERT INTO tasks (id, run_id, role, input, status, cause, created_at, "
                     "updated_at) VALUES (?, 'r', 'reviewer', ?, 'pending', ?, ?, ?)",
                     (tid, f'{{"n": {n}}}', f"handoff:{hid}", n, n))
        conn.execute("INSERT INTO handoffs (id, run_id, from_agent, to_role, payload, note, "
                     "task_id, created_at) VALUES (?, 'r', 'r/coder', 'reviewer', ?, ?, ?, ?)",
                     (hid, f'{{"n": {n}}}', f"note {n}", tid, n))
    conn.execute("INSERT INTO tasks (id, run_id, role, input, status, cause, created_at, "
                 "updated_at) VALUES ('t3', 'r', 'coder', '{}', 'pending', 'run', 5, 5)")
    conn.close()
    async with await SQLiteBlackboard.open(path) as store:
        got = await store.get_handoffs("r")
        assert [(h.id, h.from_agent, h.to_role, h.payload, h.note, h.task_id) for h in got] == [
            ("h1", "r/coder", "reviewer", {"n": 0}, "note 0", "t1"),
            ("h2", "r/coder", "reviewer", {"n": 1}, "note 1", "t2")]
        task = await store.claim_task("w", run_id="r", roles=["coder"])
        assert task is not None
        await store.complete_task(task.id, Lease("w", task.attempt), {}, agent_id="r/coder",
                                  writes=Writes(handoffs=[NewHandoff("reviewer", {"n": 9})]))
        assert [h.payload for h in await store.get_handoffs("r")][-1] == {"n": 9}
        assert len(await store.get_handoffs("r", to_role="reviewer")) == 3
    assert query(path, "SELECT version FROM orchestra_schema") == [(schema.LATEST_VERSION,)]
    assert query(path, "SELECT type FROM sqlite_master WHERE name = 'handoffs'") == [("view",)]
