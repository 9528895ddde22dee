"""Several processes on one store: claims never collide; a SIGKILL mid-transaction leaves
every committed step whole and nothing of an uncommitted one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from backends import Backend

from orchestra.store import Blackboard, NewTask

HERE = Path(__file__).parent
REPO = HERE.parents[1]
PROCESSES = 3
TASKS = 600


def child(mode: str, backend: Backend, spec: str, arg: str,
          stdout: int | None = None) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(REPO), str(HERE), os.environ.get("PYTHONPATH", "")])}
    return subprocess.Popen([sys.executable, str(HERE / "_child.py"), mode, backend.name, spec,
                             arg], env=env, stdout=stdout, stderr=subprocess.PIPE, text=True)


@pytest.mark.slow
async def test_processes_claim_every_task_exactly_once(backend: Backend, spec: str,
                                                       tmp_path: Path) -> None:
    store = await backend.open(spec)
    run = await store.create_run("p", {}, tasks=[NewTask("x", {"i": i}) for i in range(TASKS)])
    outs = [tmp_path / f"w{i}.json" for i in range(PROCESSES)]
    workers = [child("claim", backend, spec, str(out)) for out in outs]
    for worker in workers:
        _, stderr = worker.communicate(timeout=300)
        assert worker.returncode == 0, stderr
    ids = [i for out in outs for i in json.loads(out.read_text())]
    assert len(ids) == len(set(ids)) == TASKS
    tasks = await store.list_tasks(run.id)
    assert {(t.status, t.attempt) for t in tasks} == {("completed", 1)}
    events = await store.events(run.id, limit=10 * TASKS)
    assert [e.seq for e in events] == list(range(1, 2 + 3 * TASKS))
    claims = [e.data["task"] for e in events if e.kind == "task.claimed"]
    assert sorted(claims) == sorted(ids)
    await store.close()


@pytest.mark.slow
async def test_a_writer_killed_mid_transaction_leaves_only_whole_steps(
        backend: Backend, spec: str) -> None:
    store = await backend.open(spec)
    run = await store.create_run("crash", {}, tasks=[NewTask(f"c{i}", {}) for i in range(4)])
    await store.close()
    for delay in (0.05, 0.2, 0.35):
        proc = child("crash", backend, spec, run.id, stdout=subprocess.PIPE)
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line == "ready\n", (line, proc.stderr.read() if proc.stderr else "")
        time.sleep(delay)
        assert proc.poll() is None, "the writer died by itself"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        store = await backend.open(spec)
        try:
            await check_whole(store, run.id)
            await store.release_leases(run.id, owners=[f"crash-{i}" for i in range(4)])
        finally:
            await store.close()


async def check_whole(board: Blackboard, run_id: str) -> None:
    events = await board.events(run_id, limit=1_000_000)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    completed_events = {(e.data["task"], e.data["step"]) for e in events
                        if e.kind == "step.completed"}
    completed = 0
    for task in await board.list_tasks(run_id):
        steps = await board.get_steps(task.id, 0)
        done = {s.step for s in steps if s.status == "completed"}
        completed += len(done)
        assert {(task.id, s) for s in done} == {k for k in completed_events if k[0] == task.id}
        contents = {m.content for m in await board.get_messages(f"{run_id}/{task.role}")}
        for step in steps:
            tag = f"{task.id}:{step.step}"
            has = {tag + ":q", tag + ":a"} & contents
            assert has == ({tag + ":q", tag + ":a"} if step.status == "completed" else set())
            assert step.status != "completed" or step.output == {"tag": tag, "pad": "x" * 300}
    assert completed > 0
    assert (await board.step_counts(run_id))["completed"] == completed
    notes = await board.search_notes(run_id, limit=1_000_000)
    assert len(notes) == sum(1 for e in events if e.kind == "note.posted")
