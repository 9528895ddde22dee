"""``orchestra/`` never imports ``agents/`` (issue 27, item 15): the demo reaches the CLI
through public hooks any package has — an entry point (``orchestra.demo``), a model spec
naming a factory (``python:module:factory``) and a pipeline's ``summary`` — so a user's
pipeline gets the same powers."""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path

import pytest
from pydantic import BaseModel

from orchestra import NewTask, Pipeline, Role, ScriptedModel, SQLiteBlackboard, reply
from orchestra.cli.demo_cmd import load_demo
from orchestra.cli.main import main
from orchestra.models.spec import load_model
from orchestra.store import Board

PACKAGE = Path(__file__).resolve().parents[1] / "orchestra"


def _imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names


def test_the_library_imports_no_example_agents() -> None:
    offenders = {str(p.relative_to(PACKAGE)): sorted(n for n in _imported(p)
                                                      if n == "agents" or
                                                      n.startswith("agents."))
                 for p in PACKAGE.rglob("*.py")}
    assert not {k: v for k, v in offenders.items() if v}


def test_the_demo_is_an_entry_point_and_its_model_a_spec() -> None:
    demo = load_demo()
    assert demo.pipeline == "agents.pipeline:build_pipeline"
    assert demo.model.startswith("python:")
    assert load_model(demo.model).name == "demo"


class Echo(BaseModel):
    text: str


class Echoer(Role[Echo, Echo]):
    """You repeat the text."""


async def told(board: Board, run_id: str) -> list[str]:
    return [f"the story of {run_id}: {len(await board.get_handoffs(run_id))} handoffs"]


def make_pipeline(run_input: object) -> Pipeline:
    """A user's pipeline with its own summary, as the stock pipeline has one."""
    return Pipeline("told", roles=[Echoer()], start=lambda inp: [NewTask("echoer", inp)],
                    model=ScriptedModel([reply('{"text": "hi"}')]), summary=told)


def test_a_users_pipeline_summary_is_printed_after_its_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    code = main(["run", "--pipeline", "test_layers:make_pipeline", "--input",
                 '{"text": "hi"}', "--db", str(tmp_path / "o.db")])
    out = capsys.readouterr().out
    assert code == 0 and "the story of " in out and ": 0 handoffs" in out, out

    async def status() -> str:
        async with await SQLiteBlackboard.open(tmp_path / "o.db") as store:
            return (await store.list_runs())[0].status

    assert asyncio.run(status()) == "completed"
