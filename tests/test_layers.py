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


DRIVERS = ("orchestra.models", "orchestra.mcp")
"""Packages that speak to the outside world (model APIs, MCP servers) for the layers
above them: they journal nothing, ask no person, know no task (issue 47)."""
FOUNDATIONS = ("orchestra._", "orchestra.types", "orchestra.errors", "orchestra.tokens")
"""What a driver may build on: the private foundations and the leaves that re-export them."""


def _imports_above(package_dir: Path, package: str) -> dict[str, list[str]]:
    """The ``orchestra`` modules each file of ``package`` imports outside itself and the
    foundations: anywhere in the file (inside functions and ``if TYPE_CHECKING:`` too),
    relative imports resolved."""
    found: dict[str, list[str]] = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = [*package.split("."), *path.relative_to(package_dir).with_suffix("").parts]
        here = parts[:-1]  # the module's package (an ``__init__`` is its own)
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = here[:len(here) - node.level + 1] if node.level else []
                names.add(".".join(base + ([node.module] if node.module else [])))
        above = sorted(n for n in names if (n == "orchestra" or n.startswith("orchestra."))
                       and n != package and not n.startswith((f"{package}.", *FOUNDATIONS)))
        if above:
            found[str(path.relative_to(package_dir))] = above
    return found


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_driver_imports_nothing_above_it(driver: str) -> None:
    package_dir = PACKAGE.parent.joinpath(*driver.split("."))
    assert _imports_above(package_dir, driver) == {}


@pytest.mark.parametrize(("source", "above"), [
    ("from orchestra.runtime.journal import Journal\n", ["orchestra.runtime.journal"]),
    ("def f():\n    from ..runtime import keys\n", ["orchestra.runtime"]),
    ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import orchestra.store\n",
     ["orchestra.store"]),
    ("from orchestra import Role\n", ["orchestra"]),
    ("from orchestra._errors import UserError\nfrom . import rules\n"
     "from orchestra.mcp.hub import MCPHub\n", []),
])
def test_the_driver_rule_sees_every_kind_of_import(tmp_path: Path, source: str,
                                                   above: list[str]) -> None:
    driver = tmp_path / "mcp"
    driver.mkdir()
    (driver / "calls.py").write_text(source)
    assert _imports_above(driver, "orchestra.mcp") == ({"calls.py": above} if above else {})
