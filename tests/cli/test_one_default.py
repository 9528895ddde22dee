"""One default concurrency, stated in one place (issue 27, item 10): the library, every
command's flag and help, the hints and the README all say the same number."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from orchestra import CoordinatorSettings, Role
from orchestra._types import DEFAULT_CONCURRENCY, DEFAULT_ROLE_CONCURRENCY
from orchestra.cli.main import build_parser

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()


def test_every_command_and_the_library_share_one_default() -> None:
    assert CoordinatorSettings().concurrency == DEFAULT_CONCURRENCY
    assert Role.concurrency == DEFAULT_ROLE_CONCURRENCY
    sub = next(a for a in build_parser()._actions
               if isinstance(a, argparse._SubParsersAction)).choices
    for command in ("run", "resume", "fork", "worker", "serve", "demo"):
        parser = sub[command]
        assert parser.get_default("concurrency") == DEFAULT_CONCURRENCY, command
        assert f"default {DEFAULT_CONCURRENCY};" in parser.format_help(), command


def test_the_readme_states_the_same_defaults() -> None:
    said = re.findall(r"`(--)?concurrency`, default (\d+)", README)
    assert said, "the README no longer states the defaults"
    for flag, number in said:
        assert int(number) == (DEFAULT_CONCURRENCY if flag else DEFAULT_ROLE_CONCURRENCY)
    assert re.findall(r"`--concurrency`, default \d+", README)
