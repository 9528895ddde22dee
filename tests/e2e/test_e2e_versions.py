"""Runs across a deploy, with real processes (issue 49): a run of version 1 is killed
while its writer's second tool call is in flight; the code is then "deployed" as
version 2 (the writer's instructions reworded). A version-2 worker leaves the run alone,
``resume`` and ``upgrade`` under version 2 refuse (naming both versions, and the step
that would differ); a version-1 worker finishes it with no completed step run again.
A second run killed at the same point moves to version 3 (only the critic changed)
with ``upgrade`` and a version-3 worker finishes it, again running nothing twice; a
fork keeps the version of the run it starts from (version 2 will not make one to run it,
and a version-1 resume of it replays the steps it copied). While a version-2 process
serves a run of its own, ``orchestra runs`` says the version-1 run needs a worker of its
version."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

from e2e_helpers import REPO, Result, cli_argv, kill_group, poll, query

TRIAL = "tests.versions.trial_pipeline:build"
LEASE = "3"


def _env(code: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("ORCHESTRA_MODEL", "ORCHESTRA_LOG", "PYTHONPATH")}
    return {**env, "PYTHONPATH": str(REPO), "TRIAL_CODE": code}


def _cli(code: str, *args: str | Path, timeout: float = 90) -> Result:
    proc = subprocess.run(cli_argv(*args), env=_env(code), capture_output=True, text=True,
                          timeout=timeout)
    return Result(proc.returncode, proc.stdout, proc.stderr)


def _spawn(code: str, *args: str | Path, log: Path) -> subprocess.Popen[bytes]:
    with open(log.with_suffix(".out"), "wb") as out, open(log.with_suffix(".err"), "wb") as err:
        return subprocess.Popen(cli_argv(*args), env=_env(code), stdout=out, stderr=err,
                                start_new_session=True)


def _effects(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def _killed_in_the_writer(tmp_path: Path, db: Path, name: str,
                          code: str = "v1") -> tuple[str, Path]:
    """A run of ``code`` (version 1) SIGKILLed while the writer's second tool call runs."""
    effects, hold = tmp_path / f"{name}.effects", tmp_path / f"{name}.hold"
    hold.touch()
    run_input = json.dumps({"effects": str(effects), "hold_work": str(hold)})
    proc = _spawn(code, "run", "--pipeline", TRIAL, "--input", run_input, "--db", db,
                  "--lease", LEASE, log=tmp_path / name)
    try:
        poll(lambda: "work 2 start" in _effects(effects), what="the second tool call",
             proc=proc, timeout=90, interval=0.02)
    finally:
        kill_group(proc)
    hold.unlink()
    [(run_id,)] = query(db, "SELECT id FROM runs WHERE input LIKE ?", (f"%{name}.effects%",))
    return str(run_id), effects


def test_a_run_keeps_its_version_across_a_deploy(tmp_path: Path) -> None:
    db = tmp_path / "v.db"
    run_id, effects = _killed_in_the_writer(tmp_path, db, "first")
    at_kill = _effects(effects)
    assert at_kill == ["model writer 0", "work 1 start", "work 1 done", "model writer 1",
                       "work 2 start"]
    [(v1,)] = query(db, "SELECT version FROM runs WHERE id = ?", (run_id,))
    assert v1.startswith("1@")
    listed = _cli("v1", "runs", "--db", db)
    assert v1 in listed.stdout, listed

    # version 2 deployed: its worker leaves the run alone (and exits once idle)
    worker2 = _cli("v2", "worker", "--db", db, "--idle-exit", "1", "--lease", LEASE)
    assert worker2.code == 0, worker2
    assert _effects(effects) == at_kill
    assert not query(db, "SELECT 1 FROM events WHERE run_id = ? AND kind = 'task.claimed' "
                         "AND json_extract(data, '$.attempt') > 1", (run_id,))
    # resume and upgrade under version 2 refuse, naming what they must
    resumed = _cli("v2", "resume", run_id, "--db", db)
    assert resumed.code != 0 and f"started on version {v1}" in resumed.stderr, resumed
    assert "this process serves version 2@" in resumed.stderr, resumed
    upgraded = _cli("v2", "upgrade", run_id, "--db", db)
    assert upgraded.code == 1, upgraded
    assert f"run {run_id} stays on version {v1}" in upgraded.stdout, upgraded
    assert "(writer) step 1 (model model): instructions changed" in upgraded.stdout, upgraded
    assert query(db, "SELECT version FROM runs WHERE id = ?", (run_id,)) == [(v1,)]
    assert _effects(effects) == at_kill

    # a version-1 worker finishes it: only the step in flight at the kill runs again
    worker1 = _cli("v1", "worker", "--db", db, "--idle-exit", "1", "--lease", LEASE)
    assert worker1.code == 0, worker1
    assert query(db, "SELECT status, version FROM runs WHERE id = ?",
                 (run_id,)) == [("completed", v1)]
    assert _effects(effects) == [*at_kill, "work 2 start", "work 2 done", "model writer 2",
                                 "model critic"]

    # a fork keeps the version of the run it starts from: version 2 will not run it (nor
    # make it to run it), 1 does, replaying the steps it copied
    [(at,)] = query(db, "SELECT seq FROM events WHERE run_id = ? AND kind = 'step.completed'"
                        " AND json_extract(data, '$.name') = 'work' ORDER BY seq LIMIT 1",
                    (run_id,))
    runs_before = query(db, "SELECT count(*) FROM runs")
    made = _cli("v2", "fork", run_id, "--at", str(at), "--db", db)
    assert made.code != 0 and f"started on version {v1}" in made.stderr, made
    assert query(db, "SELECT count(*) FROM runs") == runs_before
    forked = _cli("v2", "fork", run_id, "--at", str(at), "--no-run", "--db", db, "--json")
    assert forked.code == 0, forked
    fork = json.loads(forked.stdout)
    assert fork["version"] == v1
    refused = _cli("v2", "resume", fork["id"], "--db", db)
    assert refused.code != 0 and f"started on version {v1}" in refused.stderr, refused
    finished = _effects(effects)
    done = _cli("v1", "resume", fork["id"], "--db", db)
    assert done.code == 0, done
    assert query(db, "SELECT status, version FROM runs WHERE id = ?",
                 (fork["id"],)) == [("completed", v1)]
    # the replay under version 1 asked nothing it had copied: its first model call and
    # first tool call replayed; the rest ran
    assert _effects(effects) == [*finished, "model writer 1", "work 2 start", "work 2 done",
                                 "model writer 2", "model critic"]


def test_upgrade_moves_a_run_whose_completed_steps_would_replay_alike(tmp_path: Path) -> None:
    db = tmp_path / "v.db"
    run_id, effects = _killed_in_the_writer(tmp_path, db, "second")
    at_kill = _effects(effects)
    [(v1,)] = query(db, "SELECT version FROM runs WHERE id = ?", (run_id,))
    # version 3 changed only the critic, which has not run: the writer's steps replay alike.
    # The killed process's lease is live for up to LEASE s: until then the run stays put
    upgraded = _cli("v3", "upgrade", run_id, "--db", db, "--json")
    if upgraded.code != 0:
        assert "is being served by a live process" in upgraded.stdout, upgraded
        assert query(db, "SELECT version FROM runs WHERE id = ?", (run_id,)) == [(v1,)]
        time.sleep(float(LEASE))
        upgraded = _cli("v3", "upgrade", run_id, "--db", db, "--json")
    assert upgraded.code == 0, upgraded
    data = json.loads(upgraded.stdout)
    assert data["moved"] and data["from"] == v1 and data["to"].startswith("3@")
    assert data["checked"] == 3  # model 1, tool 1, model 2 (tool 2 was in flight)
    worker3 = _cli("v3", "worker", "--db", db, "--idle-exit", "1", "--lease", LEASE)
    assert worker3.code == 0, worker3
    assert query(db, "SELECT status, version FROM runs WHERE id = ?",
                 (run_id,)) == [("completed", data["to"])]
    assert _effects(effects) == [*at_kill, "work 2 start", "work 2 done", "model writer 2",
                                 "model critic"]


def test_upgrade_patched_moves_a_run_whose_differences_sit_behind_patches(
        tmp_path: Path) -> None:
    db = tmp_path / "v.db"
    run_id, effects = _killed_in_the_writer(tmp_path, db, "third")
    at_kill = _effects(effects)
    time.sleep(float(LEASE))  # the killed process's lease runs out
    # version 4 rewords the writer behind patched("friendly"): only --patched moves it
    plain = _cli("v4", "upgrade", run_id, "--db", db)
    assert plain.code == 1 and "instructions, patches changed" in plain.stdout, plain
    assert "--patched" in plain.stdout, plain
    upgraded = _cli("v4", "upgrade", run_id, "--db", db, "--patched", "--json")
    assert upgraded.code == 0, upgraded
    to = json.loads(upgraded.stdout)["to"]
    assert to.startswith("4@")
    worker4 = _cli("v4", "worker", "--db", db, "--idle-exit", "1", "--lease", LEASE)
    assert worker4.code == 0, worker4
    assert query(db, "SELECT status, version FROM runs WHERE id = ?",
                 (run_id,)) == [("completed", to)]
    # the writer started before the patch: its last call asked as its first ones did
    assert _effects(effects) == [*at_kill, "work 2 start", "work 2 done", "model writer 2",
                                 "model critic"]
    # a run started on version 4 runs with the patch
    fresh = tmp_path / "fresh.effects"
    done = _cli("v4", "run", "--pipeline", TRIAL, "--db", db, "--input",
                json.dumps({"effects": str(fresh)}))
    assert done.code == 0, done
    assert _effects(fresh)[0] == "model writer 0 friendly"


def test_runs_says_a_run_needs_a_worker_of_its_version_while_others_are_served(
        tmp_path: Path) -> None:
    db = tmp_path / "v.db"
    run_id, _ = _killed_in_the_writer(tmp_path, db, "orphan")
    [(v1,)] = query(db, "SELECT version FROM runs WHERE id = ?", (run_id,))
    # version 2 deployed: a run of its own is served by a live process (held in its critic)
    hold, fresh = tmp_path / "v2.hold", tmp_path / "v2.effects"
    hold.touch()
    proc = _spawn("v2", "run", "--pipeline", TRIAL, "--db", db, "--lease", LEASE, "--input",
                  json.dumps({"effects": str(fresh), "hold": str(hold)}), log=tmp_path / "v2")
    try:
        poll(lambda: "model writer 2 friendly" in _effects(fresh), what="the v2 writer's end",
             proc=proc, timeout=90, interval=0.05)
        needs = f"{run_id}  running (needs a worker of version {v1})"
        # once the killed process's lease runs out, the v1 run has no worker of its version
        listed = poll(lambda: r if needs in (r := _cli("v2", "runs", "--db", db)).stdout
                      else None, what="the listing to name the version", timeout=30,
                      interval=0.5)
        [(v2_run,)] = query(db, "SELECT id FROM runs WHERE input LIKE ?", ("%v2.effects%",))
        [v2_line] = [ln for ln in listed.stdout.splitlines() if ln.startswith(v2_run)]
        assert v2_line.split()[1:3] == ["running", TRIAL], listed  # served: no remark
        shown = _cli("v2", "show", run_id, "--db", db, "--json")
        assert json.loads(shown.stdout)["run"]["needs_version"] == v1, shown
    finally:
        hold.unlink()
        proc.wait(timeout=60)
    # nobody serves anything now: the run has no live worker at all, as before versions
    after = _cli("v2", "runs", "--db", db)
    assert f"{run_id}  running (no live worker since " in after.stdout, after


def test_a_tool_and_a_route_behind_a_patch_keep_the_old_form_for_a_task_begun_before(
        tmp_path: Path) -> None:
    db = tmp_path / "v.db"
    run_id, effects = _killed_in_the_writer(tmp_path, db, "patched", code="t1")
    at_kill = _effects(effects)
    time.sleep(float(LEASE))  # the killed process's lease runs out
    # t2 puts a change to the work tool and to the route behind patched("careful")
    plain = _cli("t2", "upgrade", run_id, "--db", db)
    assert plain.code == 1 and "(writer) step 1 (model model): patches changed" in \
        plain.stdout, plain
    upgraded = _cli("t2", "upgrade", run_id, "--db", db, "--patched", "--json")
    assert upgraded.code == 0 and json.loads(upgraded.stdout)["to"].startswith("t2@"), upgraded
    worker = _cli("t2", "worker", "--db", db, "--idle-exit", "1", "--lease", LEASE)
    assert worker.code == 0, worker
    # the writer began under t1: the tool call in flight ran again as t1's, the route t1's
    assert _effects(effects) == [*at_kill, "work 2 start", "work 2 done", "model writer 2",
                                 "route", "model critic"]
    fresh = tmp_path / "fresh.effects"
    done = _cli("t2", "run", "--pipeline", TRIAL, "--db", db, "--input",
                json.dumps({"effects": str(fresh)}))
    assert done.code == 0, done
    assert [e for e in _effects(fresh) if e.startswith(("work 2 done", "route"))] == [
        "work 2 done carefully", "route careful"]
