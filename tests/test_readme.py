"""Every code block in the README runs: the Python blocks are executed in order (one
namespace, like a reader pasting them into one file), and every `orchestra ...` command
shown parses with the real CLI parser (no flag the CLI lacks)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from orchestra.cli.main import UsageError, build_parser

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"^```(\w*)\n(.*?)^```", README.read_text(), re.S | re.M)


def test_the_readme_has_python_blocks() -> None:
    assert sum(1 for lang, _ in BLOCKS if lang == "python") >= 4


def test_python_blocks_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                           capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "readme"}
    for i, (lang, code) in enumerate(BLOCKS):
        if lang == "python":
            exec(compile(code, f"README.md block {i}", "exec"), namespace)
    out = capsys.readouterr().out
    assert "completed" in out and "coder completed" in out and "-> reviewer" in out
    assert "'orchestra.run', 'orchestra.task'" in out  # the tracing block's spans


def _commands() -> list[list[str]]:
    commands = []
    for lang, code in BLOCKS:
        if lang:
            continue
        for line in code.splitlines():
            for part in line.split("&&"):
                words = shlex.split(part, comments=True)
                if words[:1] == ["orchestra"]:
                    commands.append(words[1:])
    return commands


@pytest.mark.parametrize("argv", _commands(), ids=" ".join)
def test_cli_commands_parse(argv: list[str]) -> None:
    try:
        build_parser().parse_args(argv)
    except UsageError as exc:
        pytest.fail(f"`orchestra {' '.join(argv)}`: {exc.message}")
