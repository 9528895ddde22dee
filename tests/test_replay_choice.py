"""The choice replay reads the coder's journaled candidates back and names the decisions
a change of ``agents/decide.py`` alters (the evidence a choice rule changed nothing else)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from types import SimpleNamespace

import pytest

from agents import decide
from benchmarks.replay_choice import candidates, main, replay

FLOOR = {"score": [2, 11, 1, 5], "exports": [3, 3], "stubs": [],
         "runs": {"parse('a: b')": "={'a': 'b'}", "parse(' x')": "!HeaderError"}}
MUTE = {"score": [4, 11, 2, 5], "exports": [2, 3], "stubs": [],
        "runs": {"parse('a: b')": "!HeaderError", "parse(' x')": "!HeaderError"}}


def _run(tmp_path: Path, outputs: list[object]) -> Path:
    run = tmp_path / "quality-x-orchestra-1"
    run.mkdir()
    con = sqlite3.connect(run / "o.db")
    con.execute("CREATE TABLE steps (task_id TEXT, retry INTEGER, step INTEGER, name TEXT, "
                "output TEXT)")
    con.executemany("INSERT INTO steps VALUES ('t1', 0, ?, 'check_output', ?)",
                    [(i, json.dumps(o)) for i, o in enumerate(outputs)])
    con.execute("INSERT INTO steps VALUES ('t1', 0, 99, 'model', '{\"score\": 1}')")
    con.commit()
    con.close()
    return run


def test_candidates_are_read_back_once_each_in_order(tmp_path: Path) -> None:
    run = _run(tmp_path, [{"data": FLOOR}, {"data": MUTE, "earlier": [FLOOR]}, "not json{"])
    assert candidates(run / "o.db") == {"t1": [FLOOR, MUTE]}
    assert candidates(tmp_path / "missing.db") == {}


def test_a_changed_decision_is_named_and_the_others_are_not(tmp_path: Path) -> None:
    run = _run(tmp_path, [{"data": FLOOR}, {"data": MUTE}])
    # an "old" rule that always takes the latest candidate: it differs where the real one
    # keeps the floor (the mute answer), and agrees on the floor alone
    latest = SimpleNamespace(Tried=decide.Tried,
                             decide=lambda tried, **_: ("sample", len(tried) - 1))
    tasks, decisions, differ = replay(latest, decide, [run / "o.db"])  # type: ignore[arg-type]
    assert (tasks, decisions) == (1, 2)
    assert len(differ) == 1 and "after 2: ('sample', 1) -> ('sample', 0)" in differ[0]
    assert replay(decide, decide, [run / "o.db"])[2] == []


def test_the_command_line_compares_with_a_revision(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    run = _run(tmp_path, [{"data": FLOOR}])
    assert main(["--old", "HEAD", str(run), str(tmp_path / "no-run")]) == 0
    assert capsys.readouterr().out.strip().endswith(
        "1 runs, 1 coder tasks with journaled candidates, 1 decisions, 0 changed")
    with pytest.raises(SystemExit):
        main(["--old", "no-such-revision", str(run)])
