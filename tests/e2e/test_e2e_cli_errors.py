"""Bad input to the CLI: one line on stderr, the documented exit code, and nothing
written (no store created, the store file byte-for-byte unchanged, no workspace made).
Plus the read commands' answers on a finished demo run."""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
import subprocess
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import pytest
from e2e_helpers import (
    DEMO_MODEL,
    Reference,
    Result,
    child_env,
    cli,
    cli_argv,
    cli_many,
    connect_ro,
    query,
    tree,
)

from agents.demo.director import DEMO_DIR
from orchestra import NewTask, SQLiteBlackboard

EXIT_USAGE, EXIT_STORE = 2, 3
SLOW = "tests.e2e.slow_pipeline:build"


async def _add_cancelled_run(db: Path) -> str:
    async with await SQLiteBlackboard.open(db) as store:
        run = await store.create_run(SLOW, {}, tasks=[NewTask("counter", {})])
        await store.set_run_status(run.id, "cancelled")
        return run.id


@pytest.fixture(scope="module")
def prepared(reference: Reference, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory of inputs: a good store (the demo run and a cancelled run), a junk
    file, a corrupt SQLite file, a spec, a non-empty directory."""
    root = tmp_path_factory.mktemp("cli-inputs")
    with closing(connect_ro(reference.db)) as src, \
            closing(sqlite3.connect(root / "store.db")) as dst:
        src.backup(dst)  # a consistent copy, WAL folded in
    (root / "cancelled.txt").write_text(asyncio.run(_add_cancelled_run(root / "store.db")))
    (root / "junk.db").write_bytes(b"this is a text file, not a database\n" * 50)
    shutil.copy(root / "store.db", root / "corrupt.db")
    with open(root / "corrupt.db", "r+b") as f:  # keep the 100-byte header, garble the rest
        f.seek(100)
        f.write(b"\xa5" * 8000)
    shutil.copy(DEMO_DIR / "spec.md", root / "spec.md")
    (root / "full").mkdir()
    (root / "full" / "keep.txt").write_text("mine\n")
    return root


@pytest.fixture
def inputs(prepared: Path, tmp_path: Path) -> Path:
    root = tmp_path / "in"
    shutil.copytree(prepared, root)
    return root


def fill(argv: list[str], root: Path, run_id: str) -> list[str]:
    cancelled = (root / "cancelled.txt").read_text()
    return [a.format(root=root, run=run_id, cancelled=cancelled) for a in argv]


DB = "{root}/store.db"
NEW = "{root}/new.db"
JUNK = "{root}/junk.db"
CORRUPT = "{root}/corrupt.db"

# (name, argv, exit code, what the error says)
CASES: list[tuple[str, list[str], int, str]] = [
    ("show-unknown-run", ["show", "nope", "--db", DB], EXIT_USAGE, "run 'nope' does not exist"),
    ("resume-unknown-run", ["resume", "nope", "--db", DB], EXIT_USAGE, "does not exist"),
    ("cancel-unknown-run", ["cancel", "nope", "--db", DB], EXIT_USAGE, "does not exist"),
    ("events-unknown-run", ["events", "nope", "--db", DB], EXIT_USAGE, "does not exist"),
    ("board-unknown-run", ["board", "nope", "--db", DB], EXIT_USAGE, "does not exist"),
    ("resume-completed", ["resume", "{run}", "--db", DB], EXIT_USAGE,
     "already completed; nothing to resume"),
    ("cancel-completed", ["cancel", "{run}", "--db", DB], EXIT_USAGE, "is completed"),
    ("resume-cancelled", ["resume", "{cancelled}", "--db", DB], EXIT_USAGE,
     "was cancelled; start a new run"),
    ("approve-unknown", ["approve", "nope", "--db", DB], EXIT_USAGE, "does not exist"),
    ("search-not-notes", ["board", "{run}", "plans", "--search", "x", "--db", DB], EXIT_USAGE,
     "--search applies to notes only"),
    ("no-store-file", ["show", "x", "--db", "{root}/absent.db"], EXIT_USAGE, "no store at"),
    ("run-missing-spec", ["run", "--spec", "{root}/missing.md", "--workspace", "{root}/full",
                          "--db", NEW], EXIT_USAGE, "missing.md does not exist"),
    ("run-workspace-is-a-file", ["run", "--spec", "{root}/spec.md", "--workspace",
                                 "{root}/spec.md", "--db", NEW], EXIT_USAGE,
     "is a file, not a directory"),
    ("run-conflicting-flags", ["run", "--pipeline", SLOW, "--spec", "{root}/spec.md",
                               "--db", NEW], EXIT_USAGE,
     f"spec.md (pipeline {SLOW} declares no options"),
    ("run-no-spec-or-pipeline", ["run", "--db", NEW], EXIT_USAGE,
     "needs --spec FILE and --workspace DIR"),
    ("run-input-not-json", ["run", "--pipeline", SLOW, "--input", "{{bad", "--db", NEW],
     EXIT_USAGE, "--input is not valid JSON"),
    ("run-unknown-module", ["run", "--pipeline", "nosuch.module:build", "--db", NEW],
     EXIT_USAGE, "cannot import pipeline 'nosuch.module:build': no module named 'nosuch'"),
    ("run-bad-model-spec", ["run", "--pipeline", SLOW, "--model", "bogus", "--db", NEW],
     EXIT_USAGE, "missing the provider prefix"),
    ("run-model-for-unknown-role", ["run", "--pipeline", SLOW, "--model", "nobody=openai:x",
                                    "--db", NEW], EXIT_USAGE, "unknown role(s) ['nobody']"),
    ("run-zero-concurrency", ["run", "--pipeline", SLOW, "--concurrency", "0", "--db", NEW],
     EXIT_USAGE, "--concurrency must be >= 1"),
    ("demo-non-empty-workspace", ["demo", "--workspace", "{root}/full", "--db", NEW],
     EXIT_USAGE, "is not empty"),
    ("argparse-missing-run", ["show", "--db", DB], EXIT_USAGE, "required: run"),
    ("argparse-bad-int", ["events", "{run}", "--after", "x", "--db", DB], EXIT_USAGE,
     "invalid int value"),
    ("junk-runs", ["runs", "--db", JUNK], EXIT_STORE, "is not an SQLite database"),
    ("junk-show", ["show", "x", "--db", JUNK], EXIT_STORE, "is not an SQLite database"),
    ("junk-resume", ["resume", "x", "--db", JUNK], EXIT_STORE, "is not an SQLite database"),
    ("junk-cancel", ["cancel", "x", "--db", JUNK], EXIT_STORE, "is not an SQLite database"),
    ("junk-worker", ["worker", "--db", JUNK], EXIT_STORE, "is not an SQLite database"),
    ("worker-negative-idle-exit", ["worker", "--idle-exit", "-1", "--db", DB], EXIT_USAGE,
     "--idle-exit must be >= 0 seconds, got -1"),
    ("junk-demo", ["demo", "--workspace", "{root}/ws", "--db", JUNK], EXIT_STORE,
     "is not an SQLite database"),
    ("junk-run", ["run", "--spec", "{root}/spec.md", "--workspace", "{root}/full",
                  "--model", DEMO_MODEL, "--db", JUNK], EXIT_STORE,
     "is not an SQLite database"),
    ("corrupt-runs", ["runs", "--db", CORRUPT], EXIT_STORE, "is corrupt"),
    ("corrupt-show", ["show", "{run}", "--db", CORRUPT], EXIT_STORE, "is corrupt"),
    ("corrupt-resume", ["resume", "{run}", "--db", CORRUPT], EXIT_STORE, "is corrupt"),
    ("corrupt-demo", ["demo", "--workspace", "{root}/ws", "--db", CORRUPT], EXIT_STORE,
     "is corrupt"),
    ("directory-as-db", ["runs", "--db", "{root}/full"], EXIT_STORE, "is a directory"),
    ("demo-db-directory-missing", ["demo", "--workspace", "{root}/ws", "--db",
                                   "{root}/nodir/x.db"], EXIT_STORE,
     "/nodir does not exist; create it first or pass another --db"),
    ("run-db-directory-missing", ["run", "--spec", "{root}/spec.md", "--workspace",
                                  "{root}/full", "--model", DEMO_MODEL, "--db",
                                  "{root}/nodir/x.db"], EXIT_STORE,
     "cannot create the store "),
    ("demo-failing-after-its-workspace-was-made", ["demo", "--workspace", "{root}/ws",
                                                   "--model", "nobody=openai:x", "--db", NEW],
     EXIT_USAGE, "unknown role(s) ['nobody']"),
]
JSON_CASES = {"show-unknown-run", "resume-completed", "run-conflicting-flags",
              "demo-db-directory-missing",
              "demo-non-empty-workspace", "junk-runs", "corrupt-show",
              "argparse-missing-run", "argparse-bad-int"}


# A bad model spec is reported with the list of accepted forms under the error line.
MULTI_LINE = {"run-bad-model-spec"}


def assert_one_line_error(res: Result, message: str, *, multi_line: bool = False) -> None:
    assert "Traceback" not in res.stderr, res
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 or (multi_line and lines), res
    assert lines[0].startswith("orchestra: error: ") and message in lines[0], res
    assert res.stdout == "", res


@dataclass(frozen=True)
class Outcome:
    result: Result
    before: dict[str, bytes | None]
    after: dict[str, bytes | None]


@pytest.fixture(scope="module")
def outcomes(prepared: Path, reference: Reference,
             tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, bool], Outcome]:
    """Every bad-input case (and its --json variant) run at once, each on its own copy of
    the inputs: one child process per case, four at a time."""
    before = tree(prepared)
    jobs = [(name, json_mode) for name, *_ in CASES for json_mode in (False, True)
            if not json_mode or name in JSON_CASES]
    argv = {name: a for name, a, *_ in CASES}
    roots = {}
    for name, json_mode in jobs:
        root = tmp_path_factory.mktemp(name) / "in"
        shutil.copytree(prepared, root)
        roots[name, json_mode] = root
    results = cli_many(*[[*fill(argv[name], roots[name, json_mode], reference.run_id),
                          *(["--json"] if json_mode else [])] for name, json_mode in jobs])
    return {job: Outcome(res, before, tree(roots[job])) for job, res in zip(jobs, results,
                                                                           strict=True)}


@pytest.mark.parametrize(("name", "argv", "code", "message"), CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_one_line_an_exit_code_and_no_writes(
        name: str, argv: list[str], code: int, message: str,
        outcomes: dict[tuple[str, bool], Outcome]) -> None:
    out = outcomes[name, False]
    assert out.result.code == code, out.result
    assert_one_line_error(out.result, message, multi_line=name in MULTI_LINE)
    assert out.after == out.before, "bad input wrote to disk"


@pytest.mark.parametrize(("name", "argv", "code", "message"),
                         [c for c in CASES if c[0] in JSON_CASES],
                         ids=[c[0] for c in CASES if c[0] in JSON_CASES])
def test_bad_input_with_json_prints_a_json_error(
        name: str, argv: list[str], code: int, message: str,
        outcomes: dict[tuple[str, bool], Outcome]) -> None:
    out = outcomes[name, True]
    res = out.result
    assert res.code == code, res
    assert res.stderr == "", res
    assert len(res.stdout.splitlines()) == 1, res
    error = json.loads(res.stdout)
    assert set(error) == {"error", "type", "exit"}
    assert error["exit"] == code and message in error["error"] and error["type"], error
    assert out.after == out.before, "bad input wrote to disk"


def test_exit_codes_are_documented_in_help() -> None:
    res = cli("--help")
    assert res.code == 0
    for line in ("2    bad arguments, unknown run/approval id",
                 "3    the --db file is not a usable orchestra store",
                 "5    the run was cancelled", "130  interrupted (Ctrl-C)"):
        assert line in res.stdout


# -- the read commands on a finished run ------------------------------------------------
def test_runs_json_lists_runs(inputs: Path, reference: Reference) -> None:
    db = inputs / "store.db"
    before = tree(inputs)
    res, active, first = cli_many(["runs", "--db", db, "--json"],
                                  ["runs", "--db", db, "--json", "--active"],
                                  ["--json", "runs", "--db", db])  # --json before the command
    assert tree(inputs) == before, "reading wrote to the store"
    assert res.code == 0, res
    assert (first.code, first.stdout) == (0, res.stdout), first
    runs = {r["id"]: r for r in json.loads(res.stdout)["runs"]}
    cancelled = (inputs / "cancelled.txt").read_text()
    assert set(runs) == {reference.run_id, cancelled}
    demo = runs[reference.run_id]
    assert demo["status"] == "completed" and demo["pipeline"] == "agents.pipeline:build_pipeline"
    assert demo["steps"] == query(db, "SELECT COUNT(*) FROM steps")[0][0]
    assert demo["input"]["max_rounds"] == 3
    assert runs[cancelled]["status"] == "cancelled"
    assert active.code == 0 and json.loads(active.stdout)["runs"] == []


def test_events_after_n(inputs: Path, reference: Reference) -> None:
    db, run_id = inputs / "store.db", reference.run_id
    last = query(db, "SELECT last_seq FROM runs WHERE id = ?", (run_id,))[0][0]
    res, text, everything, nothing = cli_many(
        ["events", run_id, "--after", str(last - 5), "--db", db, "--json"],
        ["events", run_id, "--after", str(last - 2), "--db", db],
        ["events", run_id, "--db", db, "--json"],
        ["events", run_id, "--after", str(last), "--db", db, "--json"])
    assert res.code == 0, res
    got = [json.loads(line) for line in res.stdout.splitlines()]
    assert [e["seq"] for e in got] == list(range(last - 4, last + 1))
    assert got[-1]["kind"] == "run.completed" and all(e["run_id"] == run_id for e in got)
    assert text.code == 0, text
    assert [int(line.split()[0]) for line in text.stdout.splitlines()] == [last - 1, last]
    assert [json.loads(line)["seq"] for line in everything.stdout.splitlines()] == list(
        range(1, last + 1))
    assert nothing.code == 0 and nothing.stdout == ""


def test_board_notes_search(inputs: Path, reference: Reference) -> None:
    db, run_id = inputs / "store.db", reference.run_id
    searches = [[], ["--search", "wrap"], ["--search", "because"],
                ["--search", "approved round"], ["--search", 'zebra "unbalanced AND (']]
    argvs: list[list[str | Path]] = [["board", run_id, "notes", *s, "--db", db, "--json"]
                                     for s in searches]
    results = cli_many(*argvs, ["board", run_id, "notes", "--search", "wrap", "--db", db])
    for res in results:
        assert res.code == 0, res
    everything, wrap, because, approved, nonsense = [json.loads(r.stdout) for r in results[:-1]]
    assert all(set(d) == {"notes"} for d in (everything, wrap, because, approved, nonsense))
    assert len(everything["notes"]) == 6
    assert [n["body"] for n in wrap["notes"]] == ["approved textkit/wrap.py in round 1"]
    assert len(because["notes"]) == 3
    assert all("decision" in n["tags"] for n in because["notes"])
    assert len(approved["notes"]) == 3  # every word must match
    assert nonsense["notes"] == []  # FTS syntax in the words is not parsed, nor an error
    assert results[-1].stdout.strip().splitlines() == [
        "note [approval, textkit/wrap.py] reviewer: approved textkit/wrap.py in round 1"]


def test_events_piped_into_a_closed_reader_is_not_a_traceback(inputs: Path,
                                                               reference: Reference) -> None:
    """`orchestra events RUN | head -1`: the reader leaves early."""
    proc = subprocess.Popen(cli_argv("events", reference.run_id, "--db", inputs / "store.db"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=child_env())
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # nobody reads: the first print gets EPIPE
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=30) == 0, stderr
    assert "Traceback" not in stderr and "BrokenPipe" not in stderr, stderr
