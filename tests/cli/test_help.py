"""Every command's ``--help`` says what it does in a line and shows an example; ``run``
without a pipeline says which flags it needs (issue 27, item 12)."""

from __future__ import annotations

import argparse

import pytest

from orchestra.cli.main import EXAMPLES, build_parser, main


def _commands() -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in build_parser()._actions
                  if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_every_command_has_a_description_and_an_example() -> None:
    commands = _commands()
    assert set(commands) == set(EXAMPLES)
    for name, parser in commands.items():
        text = parser.format_help()
        description = text.split("\n\n")[1]
        assert description[:1].isupper() and description.endswith("."), (name, description)
        assert f"example:\n  orchestra {name}" in text, name


def test_run_without_a_pipeline_says_what_it_needs(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run"]) == 2
    err = capsys.readouterr().err
    assert "--spec FILE and --workspace DIR" in err and "--pipeline MODULE:FACTORY" in err
    assert main(["run", "--spec", "x.md"]) == 2
    err = capsys.readouterr().err
    assert "needs --workspace DIR" in err and "--spec FILE" not in err
