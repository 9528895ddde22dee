"""kill -9 the demo at chosen instants, `orchestra resume` it in a new process, and get
exactly what an uninterrupted run produces: same files byte for byte, same board, and
only steps that were in flight at a kill run again."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from e2e_helpers import (
    Reference,
    StoreWatch,
    board,
    cli,
    event_seqs_gap_free,
    events,
    kill_group,
    logs,
    only_run_id,
    query,
    show,
    spawn,
    step_rows,
    workspace_files,
)

pytestmark = pytest.mark.slow

# Where to kill: the first moment the SQL finds a row (the store is polled read-only).
KILL_POINTS = {
    "early": "SELECT 1 FROM events WHERE kind = 'run.created'",
    # a coder's check wrote a module; the other modules are still to be coded
    "mid-coding": "SELECT 1 FROM steps s JOIN tasks t ON t.id = s.task_id WHERE t.role = "
                  "'coder' AND s.name = 'check_output' AND s.status = 'completed'",
    "review": "SELECT 1 FROM events WHERE kind = 'task.claimed' "
              "AND json_extract(data, '$.role') = 'reviewer'",
    # a coder's check: its module written, pytest running on it
    "run-tests": "SELECT 1 FROM steps s JOIN tasks t ON t.id = s.task_id WHERE t.role = "
                 "'coder' AND s.name = 'check_output' AND s.status = 'started'",
    # the coder's search/replace fix of wrap: its edited module written, pytest on it, the
    # step not journaled yet; the re-run must apply the edit to the same text once more
    "edit": "SELECT 1 FROM steps s JOIN tasks t ON t.id = s.task_id WHERE t.role = 'coder' "
            "AND s.name = 'check_output' AND s.status = 'started' AND s.step > 2",
}

Step = tuple[str, int, int]

# agents/workspace.py writes through ``mkstemp(prefix=".NAME.", suffix=".tmp")`` + rename: a
# kill between the two leaves the temp file behind, and the re-issued write uses a new
# random name. Until that is fixed such a trial ends as xfail (everything else checked);
# set this to False to make it fail.
TOLERATE_ORPHAN_TMP = False
ORPHAN_TMP = re.compile(r"(^|/)\.[^/]+\.[A-Za-z0-9_]+\.tmp$")


def in_flight(db: Path) -> dict[Step, str]:
    """Steps journaled as started but never finished (-> kind): what the kill interrupted.
    A claimed task with no first step yet has it in flight (its claim journals it)."""
    started = {(t, r, s): kind for t, r, s, kind in query(
        db, "SELECT task_id, retry, step, kind FROM steps WHERE status = 'started'")}
    first = {(t, r, 1): "model" for t, r in query(
        db, "SELECT id, retries FROM tasks t WHERE status = 'running' AND NOT EXISTS ("
            "SELECT 1 FROM steps s WHERE s.task_id = t.id AND s.retry = t.retries "
            "AND s.step = 1)")}
    return first | started


def kill_when(sql: str, args: tuple[object, ...], db: Path, log: Path, *,
              params: tuple[object, ...] = ()) -> dict[Step, str]:
    """Start ``orchestra ARGS``, SIGKILL its process tree as soon as ``sql`` finds a row;
    return the steps in flight at the kill."""
    proc = spawn(*map(str, args), log=log)
    try:
        with StoreWatch(db) as watch:
            try:
                watch.wait(sql, params, what=sql, proc=proc)
            except AssertionError as exc:
                raise AssertionError(f"{exc}\n{logs(log)}") from None
            kill_group(proc)
    finally:
        if proc.poll() is None:
            kill_group(proc)
    assert proc.returncode == -9, logs(log)
    return in_flight(db)


def assert_like_reference(db: Path, workspace: Path, run_id: str, ref: Reference, *,
                          kills: list[dict[Step, str]]) -> None:
    """``kills``: the steps in flight at each kill, in order."""
    data = show(db, run_id)
    assert data["status"] == "completed", data["run"]["error"]
    assert data["tasks"] == {"completed": 10}
    assert data["steps"]["started"] == 0 and data["steps"]["failed"] == 0

    # the outside world: the workspace equals the uninterrupted run's, byte for byte
    files = workspace_files(workspace)
    orphans = sorted(p for p in files if ORPHAN_TMP.search(p))
    assert {p: b for p, b in files.items() if p not in orphans} == ref.files
    # the board: plans, handoffs, notes and tasks (ids and timestamps aside)
    got = board(db, run_id)
    assert got.plans == ref.board.plans
    assert got.handoffs == ref.board.handoffs
    assert got.notes == ref.board.notes
    assert got.tasks == ref.board.tasks

    # the journal: only a step in flight at a kill ran again, once more per kill at most.
    # (Not "reissued <= number of kills": the coder's parallel write_file calls, or a coder
    # and a reviewer running at once, put several steps in flight at one kill.)
    rows = step_rows(db, run_id)
    assert len(rows) == data["steps"]["completed"] == len(
        step_rows(ref.db, ref.run_id)), "same number of steps as the uninterrupted run"
    again = {(t, r, s): attempts for t, r, s, _, _, attempts in rows if attempts > 1}
    interrupted = {step: kind for k in kills for step, kind in k.items()}
    assert set(again) <= set(interrupted), "a step that had completed was run again"
    assert all(attempts <= 1 + len(kills) for attempts in again.values())
    assert data["steps"]["reissued"] == sum(a - 1 for a in again.values())
    assert data["steps"]["reissued"] <= sum(len(k) for k in kills)
    # An interrupted tool call is journaled as started before it runs, so its re-run is
    # counted exactly. A model step's start is written without waiting ("counts reissues
    # after most crashes", runtime/journal.py): a fast reply can commit before it, so a
    # re-run model call may go uncounted.
    tools = {step for step, kind in interrupted.items() if kind == "tool"}
    assert tools <= set(again), "an interrupted tool call was skipped, not run again"
    # per agent, every re-run counts (a step in flight at two kills ran twice more)
    reissued_by_agents = sum(a["steps_reissued"] for a in data["agents"])
    assert reissued_by_agents == sum(a - 1 for a in again.values())

    event_seqs_gap_free(db, run_id)
    finals = [kind for _, kind, _ in events(db, run_id) if kind in (
        "run.completed", "run.failed", "run.cancelled")]
    assert finals == ["run.completed"]

    if orphans and TOLERATE_ORPHAN_TMP:
        pytest.xfail(f"known bug (agents/workspace.py _write_file_sync): a kill between "
                     f"mkstemp and os.replace leaves {orphans} in the workspace forever")
    assert not orphans, "write_file left temporary files behind"


@pytest.mark.parametrize("point", list(KILL_POINTS))
def test_kill_9_then_resume_equals_an_uninterrupted_run(point: str, tmp_path: Path,
                                                        reference: Reference) -> None:
    db, ws = tmp_path / "demo.db", tmp_path / "ws"
    interrupted = kill_when(KILL_POINTS[point], ("demo", "--db", db, "--workspace", ws), db,
                            tmp_path / "demo")
    run_id = only_run_id(db)
    status = query(db, "SELECT status FROM runs")[0][0]
    assert status in ("pending", "running"), f"the kill came too late ({status})"
    if point in ("run-tests", "edit"):
        assert any(name == "check_output" for name, in query(
            db, "SELECT name FROM steps WHERE status = 'started'")), "killed mid-pytest"
    if point == "review":
        assert query(db, "SELECT 1 FROM tasks WHERE role = 'reviewer' AND attempt = 1")

    res = cli("resume", run_id, "--db", db)
    assert res.code == 0, res
    assert f"run {run_id}: completed" in res.stdout
    assert_like_reference(db, ws, run_id, reference, kills=[interrupted])


def test_two_kills_in_a_row_then_resume(tmp_path: Path, reference: Reference) -> None:
    """Kill the demo, resume, kill the resume mid-pytest, resume again."""
    db, ws = tmp_path / "demo.db", tmp_path / "ws"
    first = kill_when(KILL_POINTS["mid-coding"], ("demo", "--db", db, "--workspace", ws), db,
                      tmp_path / "demo")
    run_id = only_run_id(db)
    resumed_at = time.time()
    second = kill_when("SELECT 1 FROM steps s JOIN tasks t ON t.id = s.task_id WHERE t.role = "
                       "'coder' AND s.name = 'check_output' AND s.status = 'started' "
                       "AND s.started_at > ?", ("resume", run_id, "--db", db), db,
                       tmp_path / "resume1", params=(resumed_at,))
    assert query(db, "SELECT status FROM runs")[0][0] == "running"

    time.sleep(3)  # no process runs it: no working time passes
    res = cli("resume", run_id, "--db", db)
    assert res.code == 0, res
    assert_like_reference(db, ws, run_id, reference, kills=[first, second])
    # each task carries the run's working seconds when it was posted: the time between
    # the kills and the resumes is not in them
    ((created,),) = query(db, "SELECT created_at FROM runs")
    stamps = query(db, "SELECT created_at, json_extract(payload, '$.worked') FROM handoffs "
                       "ORDER BY created_at")
    last_at, worked = stamps[-1]
    assert 0 < worked <= last_at - created - 3
