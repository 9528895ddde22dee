"""A pipeline declares its own command-line options and makes its run input from them;
the CLI knows none of them (issue 47, item 2): a user's pipeline and the stock one go
the same way, ``orchestra run --help`` lists them, bad values are refused by name."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from agents.cli_options import OPTIONS as STOCK
from orchestra import NewTask, Pipeline, Role, ScriptedModel, SQLiteBlackboard, UserError, reply
from orchestra.cli.main import main
from orchestra.coordinator.pipeline_options import (
    Option,
    OptionValue,
    OptionValues,
    PipelineOptions,
    declare_options,
)

REF = "test_pipeline_options:make_pipeline"


class Brief(BaseModel):
    topic: str
    drafts: int
    tone: str
    loud: bool
    notes: str | None


class Writer(Role[Brief, Brief]):
    """You repeat the brief."""


def _input(values: OptionValues) -> dict[str, Any]:
    return {"topic": values.text("topic"), "drafts": values.integer("drafts"),
            "tone": values.text("tone"), "loud": values.flag("loud"),
            "notes": values.get("notes")}


OPTIONS = PipelineOptions((
    Option("topic", required=True, help="what to write about"),
    Option("drafts", "int", default=2, minimum=1, help="drafts before the end"),
    Option("tone", choices=("plain", "warm"), default="plain", help="how it sounds"),
    Option("loud", "flag", help="shout"),
    Option("notes", help="anything else"),
), run_input=_input)


@declare_options("test_pipeline_options:OPTIONS")  # read when the CLI asks, as the stock one
def make_pipeline(run_input: dict[str, Any]) -> Pipeline:
    answer = Brief.model_validate(run_input).model_dump_json()
    return Pipeline("brief", roles=[Writer()], start=lambda inp: [NewTask("writer", inp)],
                    model=ScriptedModel([reply(answer)]))


@pytest.fixture(autouse=True)
def importable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(Path(__file__).parent))


def _recorded_input(db: Path) -> Any:
    async def read() -> Any:
        async with await SQLiteBlackboard.open(db) as store:
            [run] = await store.list_runs()
            return run.status, run.input

    return asyncio.run(read())


def test_a_users_options_make_its_run_input(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", "--pipeline", REF, "--topic", "owls", "--loud", "--tone", "warm",
                 "--db", str(tmp_path / "o.db")])
    assert code == 0, capsys.readouterr().err
    assert _recorded_input(tmp_path / "o.db") == ("completed", {
        "topic": "owls", "drafts": 2, "tone": "warm", "loud": True, "notes": None})


def test_input_as_json_is_still_taken_as_is(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    brief = {"topic": "owls", "drafts": 5, "tone": "dry", "loud": False, "notes": "n"}
    code = main(["run", "--pipeline", REF, "--input", json.dumps(brief),
                 "--db", str(tmp_path / "o.db")])
    assert code == 0, capsys.readouterr().err
    assert _recorded_input(tmp_path / "o.db") == ("completed", brief)


def test_help_lists_the_named_pipelines_options(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["run", "--pipeline", REF, "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert f"options of pipeline {REF}:" in out
    for shown in ("--topic TEXT", "what to write about (required)", "--drafts N",
                  "drafts before the end (default 2)", "--tone {plain,warm}", "--loud"):
        assert shown in out, out
    assert "--spec FILE" not in out  # the stock pipeline's are its own


def test_help_without_a_pipeline_lists_the_stock_ones(
        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    out = capsys.readouterr().out
    assert "options of pipeline agents.pipeline:build_pipeline (the default" in out
    for shown in ("--spec FILE", "--workspace DIR", "--max-rounds N", "--time-budget SECONDS",
                  "--review {failures,always}"):
        assert shown in out, out


@pytest.mark.parametrize(("argv", "says"), [
    (["--topic", "x", "--drafts", "0"], "--drafts 0 is below 1: give --drafts N of 1 or more"),
    (["--topic", "x", "--drafts", "two"], "argument --drafts: invalid int value: 'two'"),
    (["--topic", "x", "--tone", "loud"], "argument --tone: invalid choice: 'loud'"),
    ([], f"`orchestra run` needs --topic TEXT (pipeline {REF}), or --pipeline"),
    (["--topic", "x", "--input", "{}"],
     f"pipeline '{REF}' takes its input either from its options or as --input JSON, not "
     "both"),
    (["--topic", "x", "--spec", "s.md"],
     f"unrecognized arguments: --spec s.md (the options of pipeline {REF} are --topic,"),
])
def test_bad_values_are_refused_by_name_before_anything_is_written(
        argv: list[str], says: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--pipeline", REF, *argv, "--db", str(tmp_path / "o.db")]) == 2
    assert says in capsys.readouterr().err
    assert not (tmp_path / "o.db").exists()


@pytest.mark.parametrize(("option", "says"), [
    (lambda: Option("Time_Budget"), "a name is lower-case words joined by '-'"),
    (lambda: Option("n", "int", default="2"), "default '2' is not a int value"),
    (lambda: Option("n", "int", default=True), "default True is not a int value"),
    (lambda: Option("n", required=True, default="x"), "a required option has no default"),
    (lambda: Option("n", "int", choices=("a",)), "choices ['a'] need type 'text'"),
    (lambda: Option("n", minimum=0), "a minimum needs type 'int' or 'float'"),
    (lambda: PipelineOptions((Option("n"), Option("n")), run_input=_input),
     "option(s) ['n'] declared twice"),
])
def test_a_bad_declaration_fails_where_it_is_written(option: Any, says: str) -> None:
    with pytest.raises(UserError, match=re.escape(says)):
        option()


CLASHING = PipelineOptions((Option("db"),), run_input=_input)


@declare_options(CLASHING)
def clashing(run_input: Any) -> Pipeline:
    raise AssertionError("never built")


def test_an_option_orchestra_run_has_already_is_refused(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--pipeline", "test_pipeline_options:clashing"]) == 2
    assert ("pipeline 'test_pipeline_options:clashing' declares the option --db, which "
            "`orchestra run` has already: rename it") in capsys.readouterr().err


def test_the_stock_input_keeps_its_form(tmp_path: Path) -> None:
    spec = tmp_path / "spec.md"
    spec.write_text("# a spec\n")
    given: dict[str, OptionValue] = {"spec": str(spec), "workspace": str(tmp_path / "ws"),
                                     "time-budget": 60.0}
    made = STOCK.run_input(STOCK.values(given))
    assert made == {"spec": "# a spec\n", "max_rounds": 2, "review": "failures",
                    "workspace": str(tmp_path / "ws"), "time_budget": 60.0}
    no_budget = STOCK.run_input(STOCK.values({**given, "time-budget": 0.0}))
    assert "time_budget" not in no_budget and "module_budget" not in no_budget
    # not given: ten minutes per module the plan has, not ten minutes for a whole project
    default = STOCK.run_input(STOCK.values({k: v for k, v in given.items()
                                            if k != "time-budget"}))
    assert default["module_budget"] == 600.0 and "time_budget" not in default
