"""Ctrl-C during `orchestra run`, and `orchestra cancel` from another process, on a slow
pipeline (tests/e2e/slow_pipeline.py) run through the real CLI."""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from e2e_helpers import (
    StoreWatch,
    cli,
    event_seqs_gap_free,
    events,
    interrupt,
    kill_group,
    logs,
    only_run_id,
    query,
    show,
    spawn,
    step_rows,
)

pytestmark = pytest.mark.slow

SLOW = "tests.e2e.slow_pipeline:build"
FIRST_STEP = "SELECT 1 FROM events WHERE kind = 'step.completed'"


def start_slow_run(tmp_path: Path, **run_input: object
                   ) -> tuple[subprocess.Popen[bytes], Path, Path]:
    """Start `orchestra run` of the slow pipeline; return once its first step completed."""
    db, log = tmp_path / "slow.db", tmp_path / "run"
    proc = spawn("run", "--pipeline", SLOW, "--input", json.dumps(run_input), "--db", db,
                 log=log)
    try:
        with StoreWatch(db) as watch:
            watch.wait(FIRST_STEP, what="the first completed step", proc=proc)
    except BaseException:
        kill_group(proc)
        raise
    return proc, db, log


def test_ctrl_c_stops_cleanly_and_resume_finishes(tmp_path: Path) -> None:
    effects = tmp_path / "effects.log"
    turns = 20  # the run must still be working when Ctrl-C lands, on a loaded machine too
    # (model calls of 1.5 s: at 0.8 s, beside the suite and a model, the task completed first)
    proc, db, log = start_slow_run(tmp_path, turns=turns, delay=1.5, effects=str(effects))
    assert interrupt(proc) == 130, logs(log)
    run_id = only_run_id(db)
    stderr = log.with_suffix(".err").read_text()
    assert f"Resume with: orchestra resume {run_id} --db {db}" in stderr, stderr
    assert "Traceback" not in stderr, stderr

    # stopped cleanly: the lease is handed back, the run is resumable and unfinished
    assert query(db, "SELECT status, lease_owner, lease_expires_at FROM tasks") == [
        ("pending", None, None)]
    assert query(db, "SELECT status FROM runs") == [("running",)]
    done_before = query(db, "SELECT COUNT(*) FROM steps WHERE status = 'completed'")[0][0]
    assert 1 <= done_before < 2 * turns + 1
    assert [k for _, k, _ in events(db, run_id)][-2:] == ["task.requeued", "run.interrupted"]

    res = cli("resume", run_id, "--db", db)
    assert res.code == 0, res
    assert f"run {run_id}: completed" in res.stdout
    data = show(db, run_id)
    assert data["status"] == "completed" and data["tasks"] == {"completed": 1}
    (result,) = query(db, "SELECT result FROM tasks")[0]
    assert json.loads(result) == {"total": sum(range(1, turns + 1))}

    # no completed step ran again; the tool ran once per step, plus once per reissue
    rows = step_rows(db, run_id)
    assert len(rows) == 2 * turns + 1 and all(status == "completed" for *_, status, _ in rows)
    assert data["steps"]["reissued"] <= 1
    bumps = Counter(line.split()[0] for line in effects.read_text().splitlines())
    assert len(bumps) == turns
    reissued_tools = {f"{run_id}:{t}:{r}:{s}" for t, r, s, name, _, a in rows
                      if name == "bump" and a > 1}
    assert all(n == 1 or key in reissued_tools for key, n in bumps.items()), bumps
    event_seqs_gap_free(db, run_id)


def test_cancel_from_another_process_stops_the_run(tmp_path: Path) -> None:
    # slow enough that the run (20 model calls at most) outlasts a loaded machine's
    # start-up of `orchestra cancel`
    proc, db, log = start_slow_run(tmp_path, turns=100, delay=0.5)
    try:
        run_id = only_run_id(db)
        res = cli("cancel", run_id, "--db", db)
        assert res.code == 0 and res.stdout.strip() == f"run {run_id} cancelled", res
        code = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            kill_group(proc)
    assert code == 5, logs(log)  # EXIT_CANCELLED, not "completed"
    assert f"run {run_id}: cancelled" in log.with_suffix(".out").read_text()

    assert query(db, "SELECT status FROM runs") == [("cancelled",)]
    assert query(db, "SELECT status, lease_owner FROM tasks") == [("cancelled", None)]
    kinds = [k for _, k, _ in events(db, run_id)]
    assert [k for k in kinds if k in ("run.completed", "run.failed", "run.cancelled")] == [
        "run.cancelled"]
    after = kinds[kinds.index("run.cancelled") + 1:]
    # the cancel's own records (a step in flight is recorded cancelled), then nothing
    assert after[-1] == "task.cancelled", "the driver wrote on after the cancel"
    assert set(after) <= {"step.cancelled", "task.cancelled"}, after
    event_seqs_gap_free(db, run_id)

    again = cli("resume", run_id, "--db", db)
    assert again.code == 2 and "was cancelled" in again.stderr, again
