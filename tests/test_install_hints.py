"""Every install hint names this project's distribution (or the checkout), never the
unrelated ``orchestra`` on the public index."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from orchestra._install import DISTRIBUTION, install_hint

REPO = Path(__file__).resolve().parents[1]
# `pip install orchestra[...]` / `pip install 'orchestra'`: the other project's package
FOREIGN = re.compile(r"pip install\s+['\"]?orchestra(\[|['\"\s]|$)", re.MULTILINE)


def test_distribution_name_is_the_one_in_pyproject() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["name"] == DISTRIBUTION != "orchestra"


def test_no_hint_installs_someone_elses_package() -> None:
    sources = [*REPO.glob("orchestra/**/*.py"), *REPO.glob("agents/**/*.py"),
               *REPO.glob("examples/**/*.py"), *REPO.glob("benchmarks/**/*.py"),
               *REPO.glob("docs/**/*.md"), REPO / "README.md"]
    offenders = [f"{path.relative_to(REPO)}: {m.group(0)}" for path in sources
                 for m in FOREIGN.finditer(path.read_text())]
    assert not offenders, offenders


def test_the_hint_names_both_ways_to_install() -> None:
    hint = install_hint("server")
    assert "pip install -e '.[server]'" in hint
    assert f"pip install '{DISTRIBUTION}[server]'" in hint
