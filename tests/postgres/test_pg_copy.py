"""`orchestra copy`: runs move between stores (SQLite -> PostgreSQL -> SQLite) with their
whole history, read back identically; a run already in the target is refused, a live one
too; each run commits alone; the password of a DSN is never printed."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from pg_helpers import with_password

from orchestra._types import CompactionRecord, Message, ToolCallRecord
from orchestra.cli.main import main
from orchestra.store import (
    Blackboard,
    NewHandoff,
    NewNote,
    NewTask,
    StepResult,
    Writes,
)
from orchestra.store.copy import copy_runs
from orchestra.store.url import open_store

LONG = "a reply long enough to be stored once, as a pointer to its message " * 2


async def rich_run(store: Blackboard, run_id: str) -> None:
    """A run using every table: tasks (done, failed, retried, waiting, pending, running
    with a lease that has expired), steps with a reply kept once, messages with tool
    calls, a compaction, plans, a handoff, notes, approvals decided and pending."""
    await store.create_run("p", {"spec": "x"}, run_id=run_id,
                           tasks=[NewTask("coder", {"n": 1}, key="first")],
                           settings={"models": {"coder": "test"}})
    first, = await store.claim_tasks("w", capacity={"coder": 1}, limit=1, run_id=run_id)
    lease = _lease(first)
    agent = f"{run_id}/coder"
    calls = (ToolCallRecord("c1", "write_file", json.dumps({"path": "a.py", "x": "y" * 80})),)
    reply = Message("assistant", LONG, calls)
    await store.start_step(first.id, 0, 0, "model", "model", "d0", lease)
    await store.complete_step(
        StepResult(first.id, 0, 0, "model", "model", "d0",
                   output={"text": LONG, "calls": [["c1", "write_file", calls[0].arguments]]},
                   tokens_in=10, tokens_out=5, cost=0.25), lease, agent_id=agent,
        writes=Writes(messages=[Message("system", "sys"), Message("user", "do it"), reply],
                      plans=[{"modules": ["a"]}], notes=[NewNote("first note", ("t1",))]))
    await store.start_step(first.id, 0, 1, "tool", "write_file", "d1", lease)
    await store.complete_step(StepResult(first.id, 0, 1, "tool", "write_file", "d1",
                                         output={"ok": True}), lease, agent_id=agent,
                              writes=Writes(messages=[Message("tool", "ok", (), "c1",
                                                              "write_file")]))
    final = json.dumps({"done": True, "pad": "z" * 80})
    await store.complete_task(
        first.id, lease, {"done": True, "pad": "z" * 80}, agent_id=agent,
        writes=Writes(messages=[Message("assistant", final)],
                      compactions=[CompactionRecord(agent, 1, 2, "summary of 1..2")],
                      handoffs=[NewHandoff("reviewer", {"review": "a.py"}, note="please")],
                      notes=[NewNote("second note about wrapping", ("t2", "x"))],
                      plans=[{"modules": ["a", "b"]}], events=[("custom.kind", {"k": 1})]))
    await store.add_tasks(run_id, [NewTask("tester", {"t": i}, max_attempts=2)
                                   for i in range(3)])
    claimed = await store.claim_tasks("w", capacity={"reviewer": 1, "tester": 3}, limit=4,
                                      run_id=run_id, lease_seconds=0.01)
    by_role = {t.role: t for t in claimed}
    testers = [t for t in claimed if t.role == "tester"]
    await store.fail_task(testers[0].id, _lease(testers[0]), "boom", retry_at=0.0)
    await store.fail_task(testers[1].id, _lease(testers[1]), "boom for good")
    rev = by_role["reviewer"]
    for step in (0, 1):
        approval = await store.request_approval(rev.id, _lease(rev), retry=0, step=step,
                                                tool="run_tests", arguments={"k": step})
        if step == 0:
            await store.decide_approval(approval.id, approved=False, by="ann", reason="no")
            rev, = await store.claim_tasks("w", capacity={"reviewer": 1}, limit=1,
                                           run_id=run_id, lease_seconds=0.01)
    await store.serve_run(run_id, "w", 0.01)  # a worker served it, then died
    # testers[2] stays running under an expired lease (0.01 s): a crashed worker's task


def _lease(task: Any) -> Any:
    from orchestra.store import Lease

    return Lease(task.lease_owner, task.attempt)


async def snapshot(store: Blackboard, run_id: str) -> dict[str, Any]:
    """Everything the store's reads show of a run (note ids aside: the target numbers them)."""
    tasks = await store.list_tasks(run_id)
    steps = {(t.id, r): await store.get_steps(t.id, r) for t in tasks
             for r in range(t.retries + 1)}
    infos = await store.agent_infos(run_id)
    events = await store.events(run_id, limit=10_000)
    notes = await store.search_notes(run_id)
    return {
        "run": await store.get_run(run_id),
        "tasks": tasks,
        "steps": steps,
        "step_counts": await store.step_counts(run_id),
        "task_counts": await store.task_counts(run_id),
        "agents": infos,
        "messages": {a.agent_id: await store.get_messages(a.agent_id) for a in infos},
        "found": {a.agent_id: await store.search_messages(a.agent_id, "reply") for a in infos},
        "compactions": {a.agent_id: [dataclasses.replace(c, id=0) for c in
                                     await store.get_compactions(a.agent_id)] for a in infos},
        "plans": await store.get_plans(run_id),
        "handoffs": await store.get_handoffs(run_id),
        "notes": [dataclasses.replace(n, id=0, rank=None) for n in notes],
        "search": [n.body for n in await store.search_notes(run_id, text="wrapping")],
        "tagged": [n.body for n in await store.search_notes(run_id, tag="t1")],
        "approvals": await store.list_approvals(run_id),
        "served_until": await store.served_until([run_id]),
        "events": [(e.seq, e.kind, e.data, e.at) for e in events],
        "note_ids": sorted(n.id for n in notes),
        "posted": sorted(e.data["note"] for e in events if e.kind == "note.posted"),
    }


def comparable(snap: dict[str, Any]) -> dict[str, Any]:
    """``posted`` must equal ``note_ids`` in each store; the numbers may differ between them."""
    assert snap["posted"] == snap["note_ids"], "note.posted events name the store's note ids"
    rest = {k: v for k, v in snap.items() if k not in ("note_ids", "posted")}
    ids = dict(zip(snap["note_ids"], range(len(snap["note_ids"])), strict=True))
    rest["events"] = [(s, k, {**d, "note": ids[d["note"]]} if k == "note.posted" else d, at)
                      for s, k, d, at in rest["events"]]
    return rest


async def test_a_run_copies_to_postgres_and_back_reading_the_same_everywhere(
        tmp_path: Path, dsn: str) -> None:
    first, back = str(tmp_path / "first.db"), str(tmp_path / "back.db")
    async with await open_store(first) as store:
        await store.create_run("p", {}, run_id="other")
        await store.post_note("other", "someone", NewNote("a note of another run"))
        await rich_run(store, "r1")
        original = await snapshot(store, "r1")
    assert original["steps"][(original["tasks"][0].id, 0)][0].output["text"] == LONG
    async with await open_store(dsn) as pg:  # the target already holds notes of its own
        await pg.create_run("elsewhere", {}, run_id="pg-only")
        for i in range(3):
            await pg.post_note("pg-only", "x", NewNote(f"n{i}"))

    copied = await copy_runs(first, dsn, ["r1"])
    assert [(c.run_id, c.copied) for c in copied] == [("r1", True)] and copied[0].rows > 40
    async with await open_store(dsn) as pg:
        on_pg = await snapshot(pg, "r1")
        assert on_pg["note_ids"] != original["note_ids"]  # renumbered, events with them
        assert {r.id for r in await pg.list_runs()} == {"r1", "pg-only"}
    assert comparable(on_pg) == comparable(original)

    await copy_runs(dsn, back)  # and on to another SQLite file: every run of the store
    async with await open_store(back) as store:
        assert comparable(await snapshot(store, "r1")) == comparable(original)
        assert {r.id for r in await store.list_runs()} == {"r1", "pg-only"}


async def test_the_copy_resumes_on_the_target(tmp_path: Path, dsn: str) -> None:
    """The copied queue works: the expired lease is taken over (its attempt fences the
    old claim), the retry and the approved reviewer run, histories and seqs continue."""
    src = str(tmp_path / "src.db")
    async with await open_store(src) as store:
        await rich_run(store, "r1")
    await copy_runs(src, dsn)
    async with await open_store(dsn) as pg:
        claimed = await pg.claim_tasks("w2", capacity={"tester": 5, "reviewer": 1}, limit=5,
                                       run_id="r1")
        assert sorted(t.role for t in claimed) == ["tester", "tester"]  # the reviewer waits
        pending, = await pg.list_approvals("r1", status="pending")
        await pg.decide_approval(pending.id, approved=True, by="bob")
        claimed += await pg.claim_tasks("w2", capacity={"reviewer": 1}, limit=1, run_id="r1")
        assert sorted(t.role for t in claimed) == ["reviewer", "tester", "tester"]
        crashed = [t for t in claimed if t.role == "tester" and t.retries == 0]
        assert crashed and crashed[0].attempt == 2  # the copied claim counts: fencing holds
        msgs = await pg.get_messages("r1/coder")
        for task in claimed:  # new history continues each agent's seq without a gap
            await pg.complete_task(task.id, _lease(task), {"ok": 1}, agent_id="r1/coder",
                                   writes=Writes(messages=[Message("assistant", "more")]))
        assert [m.seq for m in await pg.get_messages("r1/coder")] == list(
            range(1, len(msgs) + len(claimed) + 1))
        seqs = [e.seq for e in await pg.events("r1", limit=10_000)]
        assert seqs == list(range(1, len(seqs) + 1))


def test_cli_copies_refuses_what_exists_and_never_prints_the_password(
        tmp_path: Path, dsn: str, capsys: pytest.CaptureFixture[str]) -> None:
    import asyncio

    src = tmp_path / "src.db"

    async def make() -> None:
        async with await open_store(str(src)) as store:
            for run_id in ("a1", "b2", "c3"):
                await store.create_run("p", {"i": run_id}, run_id=run_id)
    asyncio.run(make())
    url = with_password(dsn, "s3cr3t-pw")
    outputs: list[str] = []

    def run(*argv: str) -> int:
        code = main(list(argv))
        captured = capsys.readouterr()
        outputs.extend((captured.out, captured.err))
        return code

    assert run("copy", "--from", str(src), "--to", url, "--run", "a1", "--run", "b2") == 0
    assert "run a1: copied" in outputs[-2] and "copied 2 run(s)" in outputs[-2]
    # b2 is there: refused, one line, nothing copied (not even c3), exit 2 (usage)
    assert run("copy", "--from", str(src), "--to", url) == 2
    err = outputs[-1]
    assert err.count("\n") == 1 and "already has run a1, b2" in err
    assert "--skip-existing" in err
    assert run("runs", "--db", url, "--json") == 0
    assert sorted(r["id"] for r in json.loads(outputs[-2])["runs"]) == ["a1", "b2"]
    assert run("copy", "--from", str(src), "--to", url, "--skip-existing", "--json") == 0
    assert json.loads(outputs[-2])["copied"] == ["c3"]
    assert json.loads(outputs[-2])["skipped"] == ["a1", "b2"]
    assert run("copy", "--from", str(src), "--to", url, "--run", "nope") == 2
    assert "no run 'nope'" in outputs[-1]
    assert run("copy", "--from", str(tmp_path / "missing.db"), "--to", url) == 2
    assert run("copy", "--from", url, "--to", url) == 2
    unreachable = url.replace(url.split("@")[1].split("/")[0], "127.0.0.1:1")
    assert run("copy", "--from", str(src), "--to", unreachable) != 0
    assert "postgres:***@" in "".join(outputs)
    assert all("s3cr3t-pw" not in text for text in outputs)


async def test_a_run_a_live_process_serves_is_refused(tmp_path: Path, dsn: str) -> None:
    src = str(tmp_path / "src.db")
    async with await open_store(src) as store:
        await store.create_run("p", {}, run_id="live", tasks=[NewTask("r", {})])
        await store.claim_tasks("w", capacity={"r": 1}, limit=1, lease_seconds=60)
    from orchestra._errors import UserError

    with pytest.raises(UserError, match="being served by a live process"):
        await copy_runs(src, dsn)
    async with await open_store(dsn) as pg:
        assert await pg.list_runs() == []


async def test_a_failed_copy_leaves_no_part_of_the_run(tmp_path: Path, dsn: str) -> None:
    """One transaction per run: rows that cannot go in (an agent id the target already
    holds) roll back the whole run; the runs before it stay copied."""
    src = str(tmp_path / "src.db")
    async with await open_store(src) as store:
        await store.create_run("p", {}, run_id="ok")
        await rich_run(store, "clash")
    async with await open_store(dsn) as pg:
        await pg.create_run("p", {}, run_id="x", tasks=[NewTask("coder", {})])
        task, = await pg.claim_tasks("w", capacity={"coder": 1}, limit=1)
        await pg.complete_task(task.id, _lease(task), 1, agent_id="clash/coder",
                               writes=Writes(messages=[Message("user", "hi")]))
    from orchestra._errors import StoreError

    with pytest.raises(StoreError, match="copying run clash"):
        await copy_runs(src, dsn)
    async with await open_store(dsn) as pg:
        assert sorted(r.id for r in await pg.list_runs()) == ["ok", "x"]
        from orchestra._errors import NotFoundError

        with pytest.raises(NotFoundError):
            await pg.get_run("clash")
