"""Small wording (issue 27, item 14): no "model model", no "round 1: round 1", a run that
stopped before its reviews ended is not reported as "not approved", and a failed `run`
leaves no empty workspace behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.summary import run_story
from orchestra import NewNote, SQLiteBlackboard
from orchestra.cli.inspect_cmds import _handoff_text
from orchestra.cli.main import main
from orchestra.cli.progress import step_done


def test_a_model_step_is_a_model_call() -> None:
    assert step_done("model", "model") == "model call done"
    assert step_done("tool", "run_tests") == "tool run_tests done"
    assert step_done("compaction", "compaction") == "compaction done"


def test_a_round_is_named_once() -> None:
    text = _handoff_text("coder", "reviewer", "round 1: please review",
                         {"module": {"path": "wrap.py"}, "round": 1}, None)
    assert text == "handoff coder -> reviewer [wrap.py] round 1: please review"


async def test_a_stopped_run_is_not_reported_as_rejected(tmp_path: Path) -> None:
    async with await SQLiteBlackboard.open(tmp_path / "s.db") as store:
        run = await store.create_run("p", {})
        author = f"{run.id}/architect"
        await store.post_plan(run.id, author, {"modules": [{"path": "a.py"}, {"path": "b.py"},
                                                           {"path": "c.py"}, {"path": "d.py"}]})
        await store.post_note(run.id, author, NewNote("approved a.py in round 1",
                                                      ("approval", "a.py")))
        await store.post_note(run.id, author, NewNote("c.py failed after 3 review rounds: x",
                                                      ("failed", "c.py")))
        await store.post_note(run.id, author, NewNote("kept d.py in round 1 without a review",
                                                      ("kept", "d.py")))
        story = await run_story(store, run.id)
    assert "not reviewed to the end yet: b.py" in story
    assert "kept without a review, its tests unconfirmed: d.py" in story
    assert "not approved after the last review round: c.py" in story
    assert not any(line.startswith("not approved:") for line in story)


def test_a_failed_run_leaves_no_empty_workspace(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    spec, workspace = tmp_path / "spec.md", tmp_path / "ws"
    spec.write_text("# a spec\n")
    code = main(["run", "--spec", str(spec), "--workspace", str(workspace), "--model",
                 "openai-compatible:http://127.0.0.1:9/v1#m",
                 "--db", str(tmp_path / "missing" / "o.db")])  # the store cannot be made
    assert code == 3, capsys.readouterr().err
    assert not workspace.exists()


def test_a_negative_time_budget_is_refused_by_name(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "spec.md"
    spec.write_text("# a spec\n")
    code = main(["run", "--spec", str(spec), "--workspace", str(tmp_path / "ws"), "--model",
                 "openai-compatible:http://127.0.0.1:9/v1#m", "--time-budget", "-5",
                 "--db", str(tmp_path / "o.db")])
    assert code == 2
    assert "--time-budget -5 is negative" in capsys.readouterr().err
    assert not (tmp_path / "o.db").exists()
