"""The stock pipeline on the board (issue 48, item 7): its routes post what each task
finished as typed entries, so a role added by one class (a docs writer of every
accepted module) acts on them, once per module, and the stock roles ask the same."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from test_floor import NONE_RAN, PROBES_FAIL, _route
from test_plans import MODULES, SPEC
from test_project import _answer
from test_team import GOOD, TESTS, fenced, role_of
from test_team import SPEC as ADD_SPEC

from agents.entries import ModuleReviewed, ModuleWritten, TestsWritten
from agents.extend import extend
from agents.pipeline import build_pipeline
from agents.roles import WorkspaceRole
from orchestra import Coordinator, FunctionModel, On, Pipeline, SQLiteBlackboard, UserError, reply
from orchestra.cli.main import main
from orchestra.coordinator.pipeline import load_pipeline
from orchestra.models.base import ModelRequest, ModelResponse
from orchestra.store.entry_protocol import NewEntry

_PATHS = sorted(f"textkit/{n}.py" for n, _, _ in MODULES)


class Docs(BaseModel):
    module: str
    text: str


class DocsWriter(WorkspaceRole):
    """You document one finished module in a paragraph, from its code."""

    input = ModuleWritten
    output = Docs
    consumes = [On(ModuleWritten, where=lambda m: m.accepted)]
    posts_output = True

    def task_message(self, task_input: Any) -> str:
        done = ModuleWritten.model_validate(task_input)
        return f"{done.path}\n\n{(self.workspace.root / done.path).read_text()}"


build = extend(DocsWriter)


def _docs(request: ModelRequest) -> ModelResponse:
    path = request.messages[-1].content.split("\n", 1)[0]
    return reply(json.dumps({"module": path, "text": f"{path} does one thing."}))


Seen = list[tuple[str, list[str]]]


async def _run(tmp_path: Path, factory: Callable[[Any], Pipeline],
               answer: Callable[[ModelRequest], ModelResponse], spec: str = SPEC, **more: Any
               ) -> tuple[Any, Seen, list[Any], list[Any]]:
    """The stock pipeline (``factory``) over ``spec`` with scripted answers: the run,
    every request (role, messages) in order, the board's entries and consumptions."""
    ws = tmp_path / "ws"
    (ws / "textkit").mkdir(parents=True)
    (ws / "textkit/__init__.py").write_text("")
    seen: Seen = []

    def model(request: ModelRequest) -> ModelResponse:
        docs = request.messages[0].content.startswith("You document")
        seen.append(("docswriter" if docs else role_of(request),
                     [m.content for m in request.messages]))
        return _docs(request) if docs else answer(request)

    run_input = {"spec": spec, "workspace": str(ws), "time_budget": 600, **more}
    pipeline = factory(run_input)
    fn = FunctionModel(model, name="scripted")
    async with await SQLiteBlackboard.open(tmp_path / "o.db") as store:
        run = await Coordinator(store, pipeline, models={r.name: fn for r in pipeline.roles}
                                ).run(run_input)
        entries = await store.get_entries(run.id)
        consumed = await store.get_consumptions(run.id)
    return run, seen, entries, consumed


async def test_a_docs_writer_added_by_one_class_documents_each_module_once(
        tmp_path: Path) -> None:
    coded: list[str] = []
    answer = lambda r: _answer(r, coded)  # noqa: E731 (test_project's scripted team)
    run, alone, entries, consumed = await _run(tmp_path / "stock", build_pipeline, answer)
    assert run.status == "completed", run.error
    assert not consumed  # no stock role consumes: the stock pipeline runs as it did
    written = [e.value(ModuleWritten) for e in entries if e.type == "ModuleWritten"]
    assert sorted(m.path for m in written) == _PATHS
    assert all(m.accepted and m.by == "tests" and m.tests_passed for m in written)
    assert len([e for e in entries if e.type == "TestsWritten"]) == len(_PATHS)

    run, seen, entries, consumed = await _run(tmp_path / "docs", build, answer)
    assert run.status == "completed", run.error
    # the stock roles asked exactly what they asked alone (testers and coders of
    # different modules run concurrently: the interleaving is the scheduler's)
    assert sorted(s for s in seen if s[0] != "docswriter") == sorted(alone)
    by_id = {e.id: e for e in entries}
    assert len(consumed) == len(_PATHS)  # one trigger per finished module, no more
    assert all(c.role == "docswriter" and by_id[c.trigger].type == "ModuleWritten"
               for c in consumed)
    assert sorted(by_id[c.trigger].value(ModuleWritten).path for c in consumed) == _PATHS
    docs = [e.value(Docs) for e in entries if e.type == "Docs"]
    assert sorted(d.module for d in docs) == _PATHS
    assert next(s for s in seen if s[0] == "docswriter")[1][-1].startswith("textkit/")


def _failing(request: ModelRequest) -> ModelResponse:
    """One module whose code never passes, and a reviewer who blames the code."""
    role = role_of(request)
    if role == "architect":
        return reply(json.dumps({"modules": [
            {"path": "calc/add.py", "purpose": "add two integers",
             "public_api": ["add(a: int, b: int) -> int"], "test_path": "tests/test_add.py"}]}))
    if role == "tester":
        return reply(fenced("tests/test_add.py", TESTS))
    if role == "coder":
        return reply(fenced("calc/add.py", GOOD.replace("a + b", "a - b")))
    return reply(json.dumps({"module": "calc/add.py", "approved": False, "fix": "code",
                             "comments": ["add subtracts"]}))


def test_a_module_that_fails_is_written_not_accepted_and_documented_by_no_one(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "ws/calc").mkdir(parents=True)
    (tmp_path / "ws/calc/__init__.py").write_text("")
    run, seen, entries, consumed = asyncio.run(_run(
        tmp_path, build, _failing, spec=ADD_SPEC, max_rounds=1, review="always"))
    assert run.status == "completed", run.error
    assert not consumed and "docswriter" not in {role for role, _ in seen}
    (review,) = [e.value(ModuleReviewed) for e in entries if e.type == "ModuleReviewed"]
    assert (review.module, review.approved, review.comments) == (
        "calc/add.py", False, ["add subtracts"])
    (done,) = [e.value(ModuleWritten) for e in entries if e.type == "ModuleWritten"]
    assert (done.path, done.accepted, done.by, done.reason) == (
        "calc/add.py", False, "failed", "add subtracts")
    (tests,) = [e.value(TestsWritten) for e in entries if e.type == "TestsWritten"]
    assert (tests.module, tests.test_path, tests.round) == ("calc/add.py",
                                                            "tests/test_add.py", 1)
    capsys.readouterr()
    assert main(["board", run.id, "entries", "--db", str(tmp_path / "o.db")]) == 0
    shown = capsys.readouterr().out
    assert [re.match(r"entry (\w+) by (\w+)", line).groups()  # type: ignore[union-attr]
            for line in shown.splitlines() if line.startswith("entry ")] == [
        ("TestsWritten", "tester"), ("ModuleReviewed", "reviewer"),
        ("ModuleWritten", "reviewer")]


def test_the_extended_pipeline_is_rebuilt_by_its_reference(tmp_path: Path) -> None:
    run_input = {"spec": SPEC, "workspace": str(tmp_path / "ws")}
    pipeline = build(run_input)
    assert pipeline.reference() == f"{__name__}:build"
    again = load_pipeline(f"{__name__}:build", run_input)  # how resume rebuilds it
    assert sorted(again.by_name) == ["architect", "coder", "docswriter", "reviewer",
                                     "tester"]
    assert build_pipeline(run_input).reference() == "agents.pipeline:build_pipeline"


def _passing(request: ModelRequest) -> ModelResponse:
    """One module whose code passes its tests, and its docs."""
    if request.messages[0].content.startswith("You document"):
        return _docs(request)
    return _failing(request) if role_of(request) in ("architect", "tester") else reply(
        fenced("calc/add.py", GOOD))


def scripted() -> FunctionModel:
    """The model ``orchestra run --model python:test_stock_board:scripted`` builds."""
    return FunctionModel(_passing, name="scripted")


def test_the_command_line_runs_the_extended_pipeline(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec, db = tmp_path / "spec.md", tmp_path / "o.db"
    spec.write_text(ADD_SPEC)
    assert main(["run", "--pipeline", f"{__name__}:build", "--spec", str(spec),
                 "--workspace", str(tmp_path / "ws"), "--db", str(db),
                 "--model", f"python:{__name__}:scripted"]) == 0
    (run_id,) = asyncio.run(_run_ids(db))
    capsys.readouterr()
    assert main(["board", run_id, "entries", "--db", str(db)]) == 0
    shown = [line.split(" [")[0] for line in capsys.readouterr().out.splitlines()
             if line.startswith("entry ")]
    assert shown == ["entry TestsWritten by tester", "entry ModuleWritten by coder",
                     "entry Docs by docswriter"]


async def _run_ids(db: Path) -> list[str]:
    async with await SQLiteBlackboard.open(db) as store:
        return [r.id for r in await store.list_runs()]


def test_an_extension_no_import_finds_says_how_to_name_it(tmp_path: Path) -> None:
    run_input = {"spec": SPEC, "workspace": str(tmp_path / "ws")}
    local = extend(DocsWriter)  # in a function: no other process could rebuild it
    with pytest.raises(UserError, match=r"extend\(DocsWriter\) cannot be rebuilt"):
        local(run_input)
    assert extend(DocsWriter, ref="mine:docs")(run_input).reference() == "mine:docs"


@pytest.mark.parametrize("answer", [
    {"report": {**PROBES_FAIL, "passed": True}, "vouched": [3, 3]},
    {"agreed": True, "report": NONE_RAN, "vouched": [0, 0]},
    {"report": PROBES_FAIL, "vouched": [2, 2]},
    {"report": {**NONE_RAN, "passed": False, "output": "ImportError: x"}, "vouched": [0, 0]},
    {"out_of_time": True, "report": PROBES_FAIL, "vouched": [1, 2]},
    {"report": PROBES_FAIL, "vouched": [1, 2]},  # to review: not finished yet
])
def test_each_module_outcome_is_one_entry_saying_what_it_rested_on(
        answer: dict[str, Any]) -> None:
    writes = _route(**answer)
    ended = [(kind, data.get("by")) for kind, data in writes.events]
    written = [_written(e) for e in writes.entries]
    assert len(written) == len(ended) <= 1
    for (kind, by), done in zip(ended, written, strict=True):
        outcome = {"module.approved": by, "module.kept": "kept", "module.failed": "failed"}
        assert (done.path, done.by) == ("intervals.py", outcome[kind])
        assert done.accepted == (kind == "module.approved")


def _written(new: NewEntry) -> ModuleWritten:
    assert new.type == "ModuleWritten"
    return ModuleWritten.model_validate(new.body)


def test_a_module_the_architect_keeps_is_written_and_documented(tmp_path: Path) -> None:
    # the workspace holds calc/add.py and its passing tests: the plan keeps it, unwritten
    ws = tmp_path / "ws"
    (ws / "calc").mkdir(parents=True)
    (ws / "tests").mkdir()
    (ws / "calc/__init__.py").write_text("")
    (ws / "calc/add.py").write_text(GOOD)
    (ws / "tests/test_add.py").write_text(TESTS)
    run, seen, entries, consumed = asyncio.run(
        _run(tmp_path, build, _passing, spec=ADD_SPEC))
    assert run.status == "completed", run.error
    assert {role for role, _ in seen} == {"architect", "docswriter"}  # nothing rewritten
    (done,) = [e.value(ModuleWritten) for e in entries if e.type == "ModuleWritten"]
    assert (done.path, done.round, done.accepted, done.by) == ("calc/add.py", 0, True, "tests")
    (use,) = consumed
    assert (use.role, next(e for e in entries if e.id == use.trigger).type) == (
        "docswriter", "ModuleWritten")
    assert [e.value(Docs).module for e in entries if e.type == "Docs"] == ["calc/add.py"]
