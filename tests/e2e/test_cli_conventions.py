"""CLI conventions: --version, bare help, global --db/--json, ORCHESTRA_DB, run listing
filters with a header, run ids by unique prefix, hints that name the store, an idempotent
cancel, and `run` creating its workspace like `demo` does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestra.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
APPROVAL = "examples.approval:make_pipeline"


@pytest.fixture
def parked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
           capsys: pytest.CaptureFixture[str]) -> tuple[Path, str, str]:
    """A store holding one run parked on an approval; (db, run id, summary output)."""
    monkeypatch.chdir(ROOT)
    monkeypatch.delenv("ORCHESTRA_DB", raising=False)
    db = tmp_path / "store.db"
    code = main(["run", "--pipeline", APPROVAL, "--input",
                 json.dumps({"log": str(tmp_path / "published.log")}), "--db", str(db)])
    assert code == 4
    out = capsys.readouterr().out
    run_id = out.split()[1]
    return db, run_id, out


def test_version_and_bare_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0 and capsys.readouterr().out.startswith("orchestra 0.")
    assert main([]) == 0
    assert "usage: orchestra" in capsys.readouterr().out


def test_hints_name_the_store_actually_used(parked: tuple[Path, str, str]) -> None:
    db, run_id, out = parked
    for hint in (f"orchestra show {run_id} --db {db}", f"orchestra resume {run_id} --db {db}",
                 f"--db {db}  or  orchestra deny"):
        assert hint in out, out


def test_global_options_env_and_listing(parked: tuple[Path, str, str],
                                        monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    db, run_id, _ = parked
    assert main(["--db", str(db), "--json", "runs"]) == 0
    assert [r["id"] for r in json.loads(capsys.readouterr().out)["runs"]] == [run_id]
    monkeypatch.setenv("ORCHESTRA_DB", str(db))
    assert main(["runs", "--status", "waiting", "--pipeline", "approval", "--limit", "5"]) == 0
    header, row = capsys.readouterr().out.splitlines()
    assert header.split() == ["RUN", "STATUS", "PIPELINE", "VERSION", "CREATED", "STEPS", "TOKENS",
                              "COST"]
    assert row.startswith(run_id)
    assert main(["runs", "--status", "completed"]) == 0
    assert "no runs match" in capsys.readouterr().out


def test_board_takes_json_and_db_anywhere_among_its_arguments(
        parked: tuple[Path, str, str], capsys: pytest.CaptureFixture[str]) -> None:
    """argparse gave RUN and the optional KIND to its first run of positionals: KIND after
    an option (`board RUN --json handoffs`) was "unrecognized"."""
    db, run_id, _ = parked
    for argv in (["board", run_id, "--json", "approvals", "--db", str(db)],
                 ["board", run_id, "--db", str(db), "--json", "approvals"],
                 ["board", "--json", run_id, "approvals", "--db", str(db)],
                 ["--db", str(db), "board", run_id, "--json", "approvals"],
                 ["--json", "--db", str(db), "board", run_id[:5], "approvals"]):
        assert main(argv) == 0, argv
        [approval] = json.loads(capsys.readouterr().out)["approvals"]
        assert approval["tool"] == "publish" and approval["status"] == "pending", argv
    for kind in ("handoffs", "plans", "notes"):
        assert main(["board", run_id, "--json", kind, "--db", str(db)]) == 0, kind
        assert json.loads(capsys.readouterr().out) == {kind: []}
    assert main(["board", run_id, "--db", str(db), "--search", "x", "notes", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"notes": []}
    assert main(["board", run_id, "--json", "nope", "--db", str(db)]) == 2  # still checked
    assert "invalid choice: 'nope'" in json.loads(capsys.readouterr().out)["error"]


def test_run_ids_by_unique_prefix(parked: tuple[Path, str, str],
                                  capsys: pytest.CaptureFixture[str]) -> None:
    db, run_id, _ = parked
    assert main(["show", run_id[:4], "--db", str(db), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["run"]["id"] == run_id
    assert main(["show", "", "--db", str(db)]) == 2  # the empty prefix is no id
    assert main(["show", "zzzz", "--db", str(db)]) == 2


def test_an_ambiguous_prefix_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    import asyncio

    from orchestra import SQLiteBlackboard

    async def two_runs() -> None:
        store = await SQLiteBlackboard.open(tmp_path / "s.db")
        await store.create_run("p", {}, run_id="ab12")
        await store.create_run("p", {}, run_id="ab34")
        await store.close()
    asyncio.run(two_runs())
    assert main(["show", "ab", "--db", str(tmp_path / "s.db")]) == 2
    err = capsys.readouterr().err
    assert "ambiguous" in err and "ab12" in err and "ab34" in err


def test_a_second_cancel_is_not_an_error(parked: tuple[Path, str, str],
                                         capsys: pytest.CaptureFixture[str]) -> None:
    db, run_id, _ = parked
    assert main(["cancel", run_id, "--db", str(db)]) == 0
    assert main(["cancel", run_id[:6], "--db", str(db)]) == 0
    assert "already cancelled" in capsys.readouterr().out


def test_board_shows_whole_words_and_handoff_comments() -> None:
    from orchestra.cli.inspect_cmds import _handoff_text, shorten

    assert shorten("alpha beta gamma delta", 12) == "alpha beta…"
    text = _handoff_text("reviewer", "coder", "changes requested in round 1",
                         {"module": {"path": "wrap.py"}, "round": 2,
                          "comments": ["line 24 forgets the space"]}, "t1")
    assert "[wrap.py] round 2" in text and "line 24 forgets the space" in text


def test_run_creates_a_missing_workspace_like_demo(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from agents.demo import MODEL
    from agents.demo.director import spec_text

    monkeypatch.chdir(tmp_path)
    spec = tmp_path / "spec.md"
    spec.write_text(spec_text())
    workspace = tmp_path / "new" / "ws"
    code = main(["run", "--spec", str(spec), "--workspace", str(workspace), "--model",
                 MODEL, "--db", str(tmp_path / "o.db"), "--json"])
    assert code == 0 and (workspace / "textkit").is_dir()


def test_a_run_at_its_token_cap_is_paused_and_resume_raises_the_cap(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(ROOT)
    db, calls, effects = str(tmp_path / "cap.db"), tmp_path / "calls", tmp_path / "effects"
    code = main(["run", "--pipeline", "tests.e2e.slow_pipeline:build", "--input",
                 json.dumps({"turns": 8, "delay": 0, "calls": str(calls),
                             "effects": str(effects)}),
                 "--max-tokens", "60", "--db", db])
    out = capsys.readouterr().out
    run_id = out.split()[1]
    assert code == 6 and f"run {run_id}: paused" in out, out  # EXIT_PAUSED, not failed
    assert f"orchestra resume {run_id} --db {db} --max-tokens" in out
    made = calls.read_text().splitlines()
    assert 0 < len(made) < 9  # stopped part way
    assert main(["show", run_id, "--db", db, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert (shown["status"], shown["run"]["reason"]) == ("paused", "budget")
    assert main(["runs", "--db", db, "--status", "paused", "--json"]) == 0
    assert [r["id"] for r in json.loads(capsys.readouterr().out)["runs"]] == [run_id]
    assert main(["runs", "--db", db, "--active", "--json"]) == 0  # nobody serves it now
    assert json.loads(capsys.readouterr().out) == {"runs": [], "next_cursor": None}
    # a plain resume keeps the cap: it says the cap is still reached and how to raise it
    assert main(["resume", run_id, "--db", db]) == 2
    err = capsys.readouterr().err
    assert "still 60" in err and f"orchestra resume {run_id} --db {db} --max-tokens N" in err
    assert main(["resume", run_id[:5], "--db", db, "--max-tokens", "30"]) == 2  # still too low
    capsys.readouterr()
    assert main(["resume", run_id[:5], "--db", db, "--max-tokens", "100000"]) == 0
    assert f"run {run_id}: completed" in capsys.readouterr().out
    # every model call and tool effect ran once: none was repeated by the resume
    assert calls.read_text().splitlines() == [str(n) for n in range(9)]
    keys = [line.split()[0] for line in effects.read_text().splitlines()]
    assert len(keys) == len(set(keys)) == 8


def test_show_says_when_ready_work_waits_on_a_role_concurrency_limit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    import asyncio

    from orchestra import NewTask, SQLiteBlackboard

    monkeypatch.chdir(ROOT)
    db = tmp_path / "busy.db"

    async def busy() -> str:
        store = await SQLiteBlackboard.open(db)
        run = await store.create_run("tests.e2e.slow_pipeline:build", {"turns": 1},
                                     tasks=[NewTask("counter", {"i": i}) for i in range(6)])
        await store.set_run_status(run.id, "running")
        claimed = await store.claim_tasks("w1", run_id=run.id, capacity={"counter": 4},
                                          limit=16, lease_seconds=60)
        assert len(claimed) == 4  # the counter role's concurrency
        await store.close()
        return run.id
    run_id = asyncio.run(busy())
    assert main(["show", run_id, "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "waiting on a concurrency limit: 2 ready counter task(s) wait: 4 of counter's " \
           "concurrency 4 are running" in out, out
    assert main(["show", run_id, "--db", str(db), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)["concurrency"]
    assert data["ready"] == 2 and data["running"] == {"counter": 4}


def test_the_live_view_says_when_work_waits_on_a_concurrency_limit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from orchestra.cli import progress

    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(progress, "WAIT_WORTH_SAYING", 0.0)  # (how long: test_progress_waits)
    code = main(["run", "--pipeline", "tests.e2e.slow_pipeline:build", "--input",
                 json.dumps({"turns": 12, "delay": 0.3, "tasks": 6}),
                 "--db", str(tmp_path / "live.db")])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "waiting on a concurrency limit: 2 ready counter task(s) wait: 4 of counter's" in out


def test_fork_takes_a_run_id_prefix(parked: tuple[Path, str, str],
                                    capsys: pytest.CaptureFixture[str]) -> None:
    db, run_id, _ = parked
    assert main(["fork", run_id[:5], "--at", "2", "--no-run", "--db", str(db), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["id"] != run_id
