"""Two workers on two versions of the code share one PostgreSQL store (issue 49): each
takes only the runs of its own version, found by its look's SQL. A version-1 run is
SIGKILLed in its writer first; the version-1 worker finishes it with no completed step
run again, and never touches the version-2 run, nor the version-2 worker the other."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from orchestra import Coordinator
from orchestra.store.postgres import PostgresBlackboard

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "versions"))

from trial_pipeline import REF, effects, make  # noqa: E402


def _env(code: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("ORCHESTRA_MODEL", "ORCHESTRA_LOG", "PYTHONPATH")}
    return {**env, "PYTHONPATH": str(ROOT), "TRIAL_CODE": code}


def _orchestra(code: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "orchestra.cli.main", *args],
                            env=_env(code), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)


@pytest.mark.slow
async def test_two_workers_on_two_versions_take_only_their_own_runs(
        dsn: str, tmp_path: Path) -> None:
    hold = tmp_path / "hold"
    hold.touch()
    first = {"effects": str(tmp_path / "v1.effects"), "hold_work": str(hold)}
    killed = _orchestra("v1", "run", "--pipeline", REF, "--input", json.dumps(first),
                        "--db", dsn, "--lease", "3")
    try:
        for _ in range(1800):
            if "work 2 start" in effects(Path(first["effects"])) or killed.poll() is not None:
                break
            time.sleep(0.05)
    finally:
        os.killpg(killed.pid, 9)
        killed.wait(timeout=30)
    hold.unlink()
    at_kill = effects(Path(first["effects"]))
    assert at_kill[-1] == "work 2 start", (at_kill, killed.stderr.read() if killed.stderr else "")

    store = await PostgresBlackboard.open(dsn)
    try:
        [v1_run] = await store.list_runs()
        second = {"effects": str(tmp_path / "v2.effects")}
        v2_run = await Coordinator(store, make("v2", second)).start(second)
        assert v1_run.version.startswith("1@") and v2_run.version.startswith("2@")

        workers = {code: _orchestra(code, "worker", "--db", dsn, "--idle-exit", "2",
                                    "--lease", "3") for code in ("v1", "v2")}
        for code, proc in workers.items():
            _, err = proc.communicate(timeout=180)
            assert proc.returncode == 0, (code, err)

        done = {r.id: r for r in await store.list_runs()}
        assert done[v1_run.id].status == done[v2_run.id].status == "completed"
        assert done[v1_run.id].version == v1_run.version  # nobody moved it
        # each run's claims after the kill came from the worker of its version only
        for run, code in ((v1_run, "v1"), (v2_run, "v2")):
            claims = [e.data for e in await store.events(run.id, kinds=("task.claimed",))
                      if isinstance(e.data, dict)]
            pids = {int(str(c["owner"]).split(":")[1]) for c in claims}
            assert workers[code].pid in pids
            assert pids <= {workers[code].pid, killed.pid}, (code, claims)
        # only the tool call in flight at the kill ran again
        assert effects(Path(first["effects"])) == [
            *at_kill, "work 2 start", "work 2 done", "model writer 2", "model critic"]
        assert effects(Path(second["effects"])) == [  # version 2's reworded instructions
            "model writer 0 friendly", "work 1 start", "work 1 done", "model writer 1 friendly",
            "work 2 start", "work 2 done", "model writer 2 friendly", "model critic"]
    finally:
        await store.close()
