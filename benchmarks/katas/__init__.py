"""Kata sets: small specs a pipeline is given, and hidden tests it never sees.

A set is a directory (the project's own is this one; ``--katas DIR`` names another):
each kata is ``specs/<name>.md`` (the spec, naming its module paths in backticks) and
its acceptance tests, kept apart (a run gets a copy of the spec only), either
``hidden/<name>/test_hidden_*.py`` or one file ``hidden/test_hidden_<name>.py``.
:func:`score_hidden` copies the hidden tests into a finished workspace and counts how
many pass; a module that is missing or does not import fails all of them, because the
total is what the tests collect against stubs.
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
                     if not _is_test(p) and not p.endswith("__init__.py"))

    @property
    def tests(self) -> tuple[str, ...]:
        """The test paths the spec names (``tests/test_roman.py``, ``test_roman.py``)."""
        return tuple(p for p in spec_paths(self.text) if _is_test(p))

    @property
    def root(self) -> Path:
        """The kata set's directory."""
        return self.spec.parent.parent


def _is_test(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return path.startswith("tests/") or name.startswith("test_") or name.endswith("_test.py")


def spec_paths(text: str) -> list[str]:
    """The ``.py`` paths a spec names in backticks, each once, in order of appearance."""
    return list(dict.fromkeys(_PY_PATH.findall(text)))


def kata_names(root: Path = KATAS_DIR) -> list[str]:
    return sorted(p.stem for p in (root / "specs").glob("*.md"))


def load_kata(name: str, root: Path = KATAS_DIR) -> Kata:
    spec = root / "specs" / f"{name}.md"
    hidden = root / "hidden" / name
    if not hidden.is_dir():
        hidden = root / "hidden" / f"test_hidden_{name}.py"
    if not spec.is_file() or not hidden.exists():
        raise ValueError(f"no kata {name!r} in {root}; the katas are: "
                         f"{', '.join(kata_names(root))}")
    return Kata(name, spec, hidden)


def run_pytest(workspace: Path, target: str, timeout: float = 120, *,
               plugins: bool = True) -> tuple[int, int]:
    """(passed, ran) of ``pytest target`` in ``workspace``, read from its JUnit report.

    The code under test is a model's: it may loop forever, so the whole process group is
    killed at ``timeout`` (then nothing counts as passed). ``plugins=False`` starts pytest
    without the installed plugins (faster, for hidden tests that need none). A hidden
    file that cannot be imported (one module missing a name) fails its own tests only:
    without ``--continue-on-collection-errors`` pytest would run none at all."""
    with tempfile.TemporaryDirectory(prefix="kata-report-") as tmp:
        report = Path(tmp) / "report.xml"
        proc = subprocess.Popen(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
             "--continue-on-collection-errors", f"--junitxml={report}", target],
            cwd=workspace, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env={**os.environ, "PYTHONPATH": str(workspace),
                 **({} if plugins else {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})},
            start_new_session=True)
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
    return hidden_totals(kata.root)[kata.name]


def _copy_hidden(kata: Kata, target: Path) -> None:
    if kata.hidden.is_dir():
        shutil.copytree(kata.hidden, target)
    else:
        target.mkdir(parents=True)
        shutil.copy(kata.hidden, target / kata.hidden.name)


@cache
def hidden_totals(root: Path = KATAS_DIR) -> dict[str, int]:
    """Every kata's hidden test count, collected (in one pytest process) against stub
    modules, where every name a test imports exists: no implementation is involved."""
    katas = [load_kata(name, root) for name in kata_names(root)]
    with tempfile.TemporaryDirectory(prefix="kata-stubs-") as tmp:
        stubs = Path(tmp)
        for kata in katas:
            for module in kata.modules:
                stub = stubs / module
                stub.parent.mkdir(parents=True, exist_ok=True)
                stub.write_text("def __getattr__(name):\n    return None\n")
            _copy_hidden(kata, stubs / HIDDEN_IN_WORKSPACE / kata.name)
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "--collect-only", "-p", "no:cacheprovider",
             HIDDEN_IN_WORKSPACE], cwd=stubs, capture_output=True, text=True, timeout=120,
            env={**os.environ, "PYTHONPATH": str(stubs)}, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"the hidden tests do not collect against stub modules:\n"
                           f"{proc.stdout[-2000:]}")
    ids = [line.split("/")[1] for line in proc.stdout.splitlines() if "::" in line]
    return {kata.name: ids.count(kata.name) for kata in katas}


def score_hidden(kata: Kata, workspace: Path, *, plugins: bool = True) -> tuple[int, int]:
    """(passed, total) of the kata's hidden tests on a finished workspace."""
    target = workspace / HIDDEN_IN_WORKSPACE
    shutil.rmtree(target, ignore_errors=True)
    _copy_hidden(kata, target)
    passed, _ = run_pytest(workspace, HIDDEN_IN_WORKSPACE, plugins=plugins)
    return passed, hidden_total(kata)
