"""The project's own kata set: small specs a pipeline is given, and hidden tests it never sees.

Each kata is ``specs/<name>.md`` (the spec, naming its module paths and test paths in
backticks) and ``hidden/<name>/test_hidden_*.py`` (acceptance tests kept apart: a run
gets a copy of the spec only). :func:`score_hidden` copies the hidden tests into a
finished workspace and counts how many pass; a module that is missing or does not
import fails all of them, because the total is what the tests collect against stubs.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from functools import cache
from pathlib import Path

KATAS_DIR = Path(__file__).resolve().parent
SPECS_DIR = KATAS_DIR / "specs"
HIDDEN_DIR = KATAS_DIR / "hidden"
HIDDEN_IN_WORKSPACE = "hidden_acceptance"
"""Where the hidden tests are copied in a workspace, only after its run has ended."""
_PY_PATH = re.compile(r"`([A-Za-z_][\w/]*\.py)`")


@dataclass(frozen=True, slots=True)
class Kata:
    """One spec and where its hidden tests live."""

    name: str
    spec: Path
    hidden: Path

    @property
    def text(self) -> str:
        return self.spec.read_text()

    @property
    def modules(self) -> tuple[str, ...]:
        """The module paths the spec names, in order (``kata/roman.py``; no ``__init__``)."""
        return tuple(p for p in spec_paths(self.text)
                     if not p.startswith("tests/") and not p.endswith("__init__.py"))

    @property
    def tests(self) -> tuple[str, ...]:
        """The test paths the spec names (``tests/test_roman.py``)."""
        return tuple(p for p in spec_paths(self.text) if p.startswith("tests/"))


def spec_paths(text: str) -> list[str]:
    """The ``.py`` paths a spec names in backticks, each once, in order of appearance."""
    return list(dict.fromkeys(_PY_PATH.findall(text)))


def kata_names() -> list[str]:
    return sorted(p.stem for p in SPECS_DIR.glob("*.md"))


def load_kata(name: str) -> Kata:
    spec, hidden = SPECS_DIR / f"{name}.md", HIDDEN_DIR / name
    if not spec.is_file() or not hidden.is_dir():
        raise ValueError(f"no kata {name!r}; the katas are: {', '.join(kata_names())}")
    return Kata(name, spec, hidden)


def run_pytest(workspace: Path, target: str, timeout: float = 120) -> tuple[int, int]:
    """(passed, ran) of ``pytest target`` in ``workspace``, read from its JUnit report.

    The code under test is a model's: it may loop forever, so the whole process group is
    killed at ``timeout`` (then nothing counts as passed)."""
    with tempfile.TemporaryDirectory(prefix="kata-report-") as tmp:
        report = Path(tmp) / "report.xml"
        proc = subprocess.Popen(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
             f"--junitxml={report}", target],
            cwd=workspace, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env={**os.environ, "PYTHONPATH": str(workspace)}, start_new_session=True)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return 0, 0
        if not report.is_file():
            return 0, 0
        suites = ET.parse(report).getroot().iter("testsuite")
        ran = passed = 0
        for suite in suites:
            n = int(suite.get("tests", 0))
            ran += n
            passed += n - sum(int(suite.get(k, 0)) for k in ("failures", "errors", "skipped"))
        return passed, ran


def hidden_total(kata: Kata) -> int:
    """How many hidden tests the kata has (what a missing module fails)."""
    return hidden_totals()[kata.name]


@cache
def hidden_totals() -> dict[str, int]:
    """Every kata's hidden test count, collected (in one pytest process) against stub
    modules, where every name a test imports exists: no implementation is involved."""
    katas = [load_kata(name) for name in kata_names()]
    with tempfile.TemporaryDirectory(prefix="kata-stubs-") as tmp:
        root = Path(tmp)
        for kata in katas:
            for module in kata.modules:
                stub = root / module
                stub.parent.mkdir(parents=True, exist_ok=True)
                stub.write_text("def __getattr__(name):\n    return None\n")
            shutil.copytree(kata.hidden, root / HIDDEN_IN_WORKSPACE / kata.name)
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "--collect-only", "-p", "no:cacheprovider",
             HIDDEN_IN_WORKSPACE], cwd=root, capture_output=True, text=True, timeout=120,
            env={**os.environ, "PYTHONPATH": str(root)}, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"the hidden tests do not collect against stub modules:\n"
                           f"{proc.stdout[-2000:]}")
    ids = [line.split("/")[1] for line in proc.stdout.splitlines() if "::" in line]
    return {kata.name: ids.count(kata.name) for kata in katas}


def score_hidden(kata: Kata, workspace: Path) -> tuple[int, int]:
    """(passed, total) of the kata's hidden tests on a finished workspace."""
    target = workspace / HIDDEN_IN_WORKSPACE
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(kata.hidden, target)
    passed, _ = run_pytest(workspace, HIDDEN_IN_WORKSPACE)
    return passed, hidden_total(kata)
