"""Every code block in the README and in ``docs/`` runs: the README's Python blocks are
executed in order (one namespace, like a reader pasting them into one file), each doc's
after them in a namespace of its own (the docs continue the README's examples), and
every `orchestra ...` command shown parses with the real CLI parser (no flag the CLI
lacks). (Blocks fenced ``py`` need a server: tests/server/test_readme_service.py runs
those.)"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from orchestra.cli.main import UsageError, build_parser

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
DOCS = sorted((REPO / "docs").glob("*.md"))


def _blocks(path: Path) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = re.findall(r"^```(\w*)\n(.*?)^```", path.read_text(),
                                              re.S | re.M)
    return found


def _run_python(path: Path, namespace: dict[str, object]) -> None:
    for i, (lang, code) in enumerate(_blocks(path)):
        if lang == "python":
            exec(compile(code, f"{path.name} block {i}", "exec"), namespace)


DOC_SAYS = {
    "answer-formats.md": ["completed {'wrap.py': 'def wrap(text, width):\\n    return [text]\\n'}"],
    "tracing.md": ["'orchestra.run', 'orchestra.task'"],  # the spans
}
"""What a doc's Python blocks print (a doc whose blocks only assert is not listed)."""


def test_the_readme_has_python_blocks() -> None:
    assert sum(1 for lang, _ in _blocks(README) if lang == "python") >= 3


def test_readme_python_blocks_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    _run_python(README, {"__name__": "readme"})
    out = capsys.readouterr().out
    assert "completed" in out and "coder completed" in out and "-> reviewer" in out


@pytest.mark.parametrize("doc", [d for d in DOCS if any(lang == "python"
                                                        for lang, _ in _blocks(d))],
                         ids=lambda d: d.name)
def test_doc_python_blocks_run(doc: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                               capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "readme"}
    _run_python(README, namespace)
    capsys.readouterr()
    _run_python(doc, namespace)
    out = capsys.readouterr().out
    for said in DOC_SAYS.get(doc.name, []):
        assert said in out, (doc.name, out)


def test_every_doc_the_readme_links_exists() -> None:
    linked = re.findall(r"\]\((docs/[\w.-]+)", README.read_text())
    assert linked and all((REPO / name).is_file() for name in linked), linked


def _commands() -> list[list[str]]:
    commands = []
    for path in [README, *DOCS]:
        for lang, code in _blocks(path):
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
