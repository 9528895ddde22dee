"""``orchestra/`` never imports ``agents/`` nor names it in a string (issue 27, item 15;
issue 47, item 2): the demo reaches the CLI
through public hooks any package has — an entry point (``orchestra.demo``), a model spec
naming a factory (``python:module:factory``) and a pipeline's ``summary`` — so a user's
pipeline gets the same powers."""

from __future__ import annotations

import ast
import asyncio
import re
from pathlib import Path

import pytest
from pydantic import BaseModel

from orchestra import NewTask, Pipeline, Role, ScriptedModel, SQLiteBlackboard, reply
from orchestra.cli.demo_entry import load_demo
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


STOCK = PACKAGE.parent / "agents"
STOCK_MODULES = {p.stem if p.suffix else p.name for p in STOCK.iterdir()
                 if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").exists()}
_REFERENCE = re.compile(r"(?<![\w.])agents\.(\w+)(?:[\w.]*:\w+)?")


def _names_the_stock_package(text: str) -> bool:
    """Whether ``text`` names a module of ``agents`` the way an import or a ``module:attr``
    reference would (``agents.pipeline``, ``agents.x:y``); SQL's ``agents.last_seq``
    (the table's column) names no module, nor does ``"agents"`` (the table, a JSON key)."""
    return any(m.group(1) in STOCK_MODULES or ":" in m.group(0)
               for m in _REFERENCE.finditer(text))


def _stock_references(path: Path) -> list[str]:
    """The string constants of ``path`` (docstrings and f-string parts too) that name
    the stock package: a string can import it as surely as an import statement."""
    return [node.value for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and _names_the_stock_package(node.value)]


def test_the_library_names_no_example_agents_in_a_string() -> None:
    offenders = {str(p.relative_to(PACKAGE)): _stock_references(p)
                 for p in PACKAGE.rglob("*.py")}
    assert not {k: v for k, v in offenders.items() if v}


@pytest.mark.parametrize(("text", "names"), [
    ("agents.pipeline:build_pipeline", True), ("agents.pipeline", True), ("agents", False),
    ("python:agents.demo.director:demo_model", True), ("see agents.cli_options", True),
    ("agents.future:thing", True), ("SET last_seq = agents.last_seq + 1", False),
    ("WHERE m.agent_id = agents.id", False), ("the agents. Each", False),
    ("self.agents.get(key)", False)])
def test_what_counts_as_naming_the_stock_package(text: str, names: bool) -> None:
    assert _names_the_stock_package(text) is names


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
