"""kill -9 a run while its agents are writing, resume it in a new process: the text
written before the kill stays in the log, its attempt is marked interrupted (the next
attempt's first delta says ``reissue``; readers show the cut), the re-issued call
streams as a new attempt and completes, and tokens are counted once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from e2e_helpers import (
    StoreWatch,
    cli,
    event_seqs_gap_free,
    events,
    kill_group,
    logs,
    only_run_id,
    spawn,
)

from orchestra._types import Event
from orchestra.cli.live_text import LiveText

pytestmark = pytest.mark.slow
PIPELINE = "tests.cli.stream_pipeline:build"
SLOW = {"lines": 5, "size": 4, "every": 0.04}  # ~65 pieces a call: ~2.6 s


def test_kill_mid_stream_then_resume(tmp_path: Path) -> None:
    db, log = tmp_path / "o.db", tmp_path / "run"
    proc = spawn("run", "--pipeline", PIPELINE, "--input", json.dumps(SLOW), "--db", db,
                 log=log)
    try:
        with StoreWatch(db) as watch:
            (run_id,) = watch.wait(
                "SELECT run_id FROM events WHERE kind = 'model.delta' AND "
                "json_extract(data, '$.role') = 'writer' GROUP BY run_id HAVING count(*) >= 3",
                what="the writer's third delta", proc=proc)[0]
            kill_group(proc)
    finally:
        if proc.poll() is None:
            kill_group(proc)
    assert proc.returncode == -9, logs(log)
    before = events(db, run_id)
    assert not any(k == "step.completed" for _, k, _ in before)  # killed mid-answer

    resumed = cli("resume", run_id, "--db", db)
    assert resumed.code == 0, resumed
    event_seqs_gap_free(db, run_id)
    after = events(db, run_id)
    assert after[:len(before)] == before  # what was written before the kill stays

    shown = json.loads(cli("show", run_id, "--db", db, "--json").stdout)
    for role in ("writer", "critic"):
        deltas = [d for _, k, d in after if k == "model.delta" and d["role"] == role]
        attempts = sorted({d["attempt"] for d in deltas})
        final = [d for d in deltas if d["attempt"] == attempts[-1]]
        answer = "".join(d.get("text", "") for d in final)
        assert answer.startswith(f"{role} line 1") and answer.endswith("words ")
        if len(attempts) == 1:
            continue  # this one had not begun to write at the kill
        assert attempts == [1, 2]
        cut = "".join(d.get("text", "") for d in deltas if d["attempt"] == 1)
        assert cut and answer.startswith(cut) and len(cut) < len(answer)  # partial, kept
        assert final[0].get("first") and final[0].get("reissue")  # marked on the new one
        assert not any(d.get("reissue") for d in deltas if d["attempt"] == 1)
    # a reader sees the cut: the interrupted attempt is marked where it stopped
    text = LiveText()
    lines = [line for seq, kind, data in after
             for line in text.apply(Event(run_id, seq, kind, data, 0.0))]
    assert "writer | [attempt 1 interrupted: the call was made again]" in lines
    # tokens counted once: from the journal's completed steps, not from the deltas
    run = shown["run"]
    assert shown["steps"]["completed"] == 2 and shown["steps"]["reissued"] >= 1
    steps = [json.loads(r) for r in cli("events", run_id, "--db", db, "--json",
                                        "--no-tokens").stdout.splitlines()]
    completed = [e["data"] for e in steps if e["kind"] == "step.completed"]
    assert len(completed) == 2
    assert run["tokens_out"] == sum(c["tokens_out"] for c in completed)
    assert run["tokens_in"] == sum(c["tokens_in"] for c in completed)
    assert not any(e["kind"] == "model.delta" for e in steps)


def test_a_step_completed_before_the_kill_replays_without_deltas(tmp_path: Path) -> None:
    db, log = tmp_path / "o.db", tmp_path / "run"
    run_input = {**SLOW, "outline": True}
    proc = spawn("run", "--pipeline", PIPELINE, "--input", json.dumps(run_input), "--db", db,
                 log=log)
    try:
        with StoreWatch(db) as watch:  # the writer's answer (its step 3) has begun
            (run_id,) = watch.wait(
                "SELECT run_id FROM events WHERE kind = 'model.delta' AND "
                "json_extract(data, '$.role') = 'writer' AND json_extract(data, '$.step') = 3 "
                "GROUP BY run_id HAVING count(*) >= 2", what="the writer's answer", proc=proc)[0]
            kill_group(proc)
    finally:
        if proc.poll() is None:
            kill_group(proc)
    assert proc.returncode == -9, logs(log)
    resumed = cli("resume", run_id, "--db", db)
    assert resumed.code == 0, resumed
    event_seqs_gap_free(db, run_id)
    writer = [d for _, k, d in events(db, run_id) if k == "model.delta" and d["role"] == "writer"]
    # step 1 (the outline call, completed before the kill) replayed: its deltas are attempt 1's
    outline = [d for d in writer if d["step"] == 1]
    assert {d["attempt"] for d in outline} == {1}
    arguments = "".join(c[2] for d in outline for c in d.get("calls", []))
    assert json.loads(arguments)["points"][0].startswith("point 0")
    # step 3 (the answer) streamed twice: cut at the kill, then whole
    answer = [d for d in writer if d["step"] == 3]
    assert sorted({d["attempt"] for d in answer}) == [1, 2]
    again = [d for d in answer if d["attempt"] == 2]
    assert again[0].get("first") and again[0].get("reissue")
    assert "".join(d.get("text", "") for d in again).startswith("writer line 1")


def test_a_retrys_first_call_cut_by_a_kill_is_reissued(tmp_path: Path) -> None:
    """The first call of a retry is journaled by its claim, not by a row of its own: when
    the process running a retry dies in that call, the call made again by the next claim
    of the same retry is marked ``reissue`` too (before: only on the task's first go)."""
    db, log = tmp_path / "o.db", tmp_path / "run"
    run_input = json.dumps({**SLOW, "fail_once": str(tmp_path / "failed-once")})
    failed = cli("run", "--pipeline", PIPELINE, "--input", run_input, "--db", db)
    assert failed.code != 0 and (tmp_path / "failed-once").exists(), failed
    run_id = only_run_id(db)
    proc = spawn("resume", run_id, "--db", db, log=log)  # the writer's retry begins
    try:
        with StoreWatch(db) as watch:
            watch.wait("SELECT run_id FROM events WHERE kind = 'model.delta' AND "
                       "json_extract(data, '$.role') = 'writer' AND "
                       "json_extract(data, '$.retry') = 1 GROUP BY run_id HAVING count(*) >= 3",
                       what="the writer's retry writing", proc=proc)
            kill_group(proc)
    finally:
        if proc.poll() is None:
            kill_group(proc)
    assert proc.returncode == -9, logs(log)
    resumed = cli("resume", run_id, "--db", db)
    assert resumed.code == 0, resumed
    writer = [d for _, k, d in events(db, run_id) if k == "model.delta" and d["role"] == "writer"]
    assert writer and {d["retry"] for d in writer} == {1}  # the failed call wrote nothing
    cut, again = sorted({d["attempt"] for d in writer})  # the retry's two claims
    firsts = {d["attempt"]: d for d in writer if d.get("first")}
    assert not firsts[cut].get("reissue")  # the retry's own first claim starts anew
    assert firsts[again].get("reissue")  # its next claim re-issued the call
    answer = "".join(d.get("text", "") for d in writer if d["attempt"] == again)
    assert answer.startswith("writer line 1") and answer.endswith("words ")
