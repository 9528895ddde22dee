"""The CLI's own settings (model specs, token cap) are recorded apart from a run's input
(in its ``run.created`` event), never in it: an input with keys named
``model``/``models`` is the user's and runs like any other."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from e2e_helpers import DEMO_MODEL, cli, only_run_id, query

from orchestra import NewTask, SQLiteBlackboard
from orchestra.coordinator.run_models import legacy_settings, recorded_settings

SLOW = "tests.e2e.slow_pipeline:build"
USERS_INPUT = {"turns": 1, "delay": 0, "models": "mine", "model": 42, "max_tokens": "lots"}
SETTINGS = ("SELECT r.input, json_extract(e.data, '$.settings') FROM runs r JOIN events e "
            "ON e.run_id = r.id AND e.kind = 'run.created'")


def test_an_input_with_model_keys_runs_and_is_stored_as_given(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    res = cli("run", "--pipeline", SLOW, "--input", json.dumps(USERS_INPUT), "--db", db)
    assert res.code == 0 and "Traceback" not in res.stderr, res
    [(stored, settings)] = query(db, SETTINGS)
    assert json.loads(stored) == USERS_INPUT and json.loads(settings) == {}


def test_model_flags_go_to_the_runs_settings_not_its_input(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    res = cli("run", "--pipeline", SLOW, "--input", json.dumps(USERS_INPUT), "--db", db,
              "--model", f"counter={DEMO_MODEL}")
    assert res.code in (0, 1), res  # (the demo's recording does not know this pipeline)
    [(stored, settings)] = query(db, SETTINGS)
    assert json.loads(stored) == USERS_INPUT
    assert json.loads(settings) == {"models": {"counter": DEMO_MODEL}}


async def _old_run(db: Path, run_input: object) -> str:
    """A run as the code before settings wrote it: no settings, the input as given."""
    async with await SQLiteBlackboard.open(db) as store:
        run = await store.create_run(SLOW, run_input, tasks=[NewTask("counter", run_input,
                                                                     max_attempts=1)])
        return run.id


@pytest.mark.parametrize("command", ["resume", "worker"])
def test_resume_and_worker_serve_an_older_run_whose_input_has_model_keys(
        tmp_path: Path, command: str) -> None:
    db = tmp_path / "s.db"
    run_id = asyncio.run(_old_run(db, USERS_INPUT))
    argv = ["resume", run_id] if command == "resume" else ["worker", "--run", run_id]
    res = cli(*argv, "--db", db)
    assert res.code == 0 and "Traceback" not in res.stderr, res
    assert query(db, "SELECT status FROM runs") == [("completed",)]
    assert only_run_id(db) == run_id


def test_settings_of_older_runs_keep_only_real_specs() -> None:
    spec = "openai:gpt-4.1-mini"
    assert legacy_settings({"model": spec, "models": {"coder": spec}, "max_tokens": 500}) == {
        "model": spec, "models": {"coder": spec}, "max_tokens": 500}
    assert legacy_settings({"model": 42, "models": "mine", "max_tokens": "x"}) == {}
    assert legacy_settings({"model": "gpt-4", "models": {"coder": 3}}) == {}
    assert legacy_settings(["not", "a", "dict"]) == {}


async def test_recorded_settings_come_from_the_run_and_its_later_events(tmp_path: Path) -> None:
    spec = "openai:gpt-4.1-mini"
    async with await SQLiteBlackboard.open(tmp_path / "s.db") as store:
        old = await store.create_run("p", {"model": spec})  # written by an older orchestra
        assert await recorded_settings(store, old) == {"model": spec}
        new = await store.create_run("p", {"model": spec}, settings={"max_tokens": 9})
        assert await recorded_settings(store, new) == {"max_tokens": 9}  # input not read
        await store.append_event(new.id, "run.budget", {"max_tokens": 99})
        await store.append_event(new.id, "run.settings", {"model": spec})
        await store.append_event(new.id, "run.budget", {"max_tokens": 7})
        assert await recorded_settings(store, new) == {"model": spec, "max_tokens": 7}
