"""Check the held-out set against itself: run each spec's hidden tests on an implementation.

    python -m benchmarks.katas_heldout.validate              # the references: all must pass
    python -m benchmarks.katas_heldout.validate --stub       # modules returning None: all fail
    python -m benchmarks.katas_heldout.validate --impl DIR   # any directory of modules

The modules of every spec (the ``.py`` names its text gives in backticks, except
``test_*``) are copied from the implementation into one temporary workspace root with the
hidden tests, and one pytest process runs them all (the module names of the specs are
distinct). Prints ``spec passed/total`` per spec and a last JSON line; exits 0 only when
every hidden test passed and every spec collected the count ``hidden/COUNTS`` gives.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

SET_DIR = Path(__file__).resolve().parent
SPECS_DIR, HIDDEN_DIR, REFERENCE_DIR = SET_DIR / "specs", SET_DIR / "hidden", SET_DIR / "reference"
STUB = "def __getattr__(name):\n    return None\n"
_MODULE = re.compile(r"`([A-Za-z_]\w*\.py)`")


def spec_names() -> list[str]:
    return sorted(p.stem for p in SPECS_DIR.glob("*.md"))


def spec_modules(name: str) -> list[str]:
    """The module files a spec names in backticks (its test files excluded), in order."""
    found = _MODULE.findall((SPECS_DIR / f"{name}.md").read_text())
    return list(dict.fromkeys(m for m in found if not m.startswith("test_")))


def expected_counts() -> dict[str, int]:
    pairs = (line.split() for line in (HIDDEN_DIR / "COUNTS").read_text().splitlines() if line)
    return {name: int(count) for name, count in pairs}


def _junit_results(report: Path) -> tuple[dict[str, int], dict[str, int]]:
    """(passed, collected) per hidden test module, read from a JUnit report."""
    passed: dict[str, int] = {}
    collected: dict[str, int] = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        module = case.get("classname", "").rsplit(".", 1)[-1]
        if not case.get("name", "").startswith("test_"):
            continue  # a module that failed to collect reports one error case named after it
        collected[module] = collected.get(module, 0) + 1
        if not any(child.tag in ("failure", "error", "skipped") for child in case):
            passed[module] = passed.get(module, 0) + 1
    return passed, collected


def validate(impl: Path | None, names: list[str], timeout: float = 120) -> dict[str, list[int]]:
    """``{spec: [passed, collected, expected]}`` of the hidden tests on ``impl`` (None: stubs)."""
    with tempfile.TemporaryDirectory(prefix="heldout-validate-") as tmp:
        root = Path(tmp)
        for name in names:
            for module in spec_modules(name):
                source = None if impl is None else impl / module
                if source is None:
                    (root / module).write_text(STUB)
                elif source.is_file():
                    shutil.copy(source, root / module)
            shutil.copy(HIDDEN_DIR / f"test_hidden_{name}.py", root)
        report = root / "report.xml"
        proc = subprocess.Popen(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
             "--continue-on-collection-errors",
             f"--rootdir={root}", f"--junitxml={report}",
             *(f"test_hidden_{name}.py" for name in names)],
            cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            # the hidden tests need no plugin, and loading them all is most of the start-up
            env={**os.environ, "PYTHONPATH": str(root), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
            start_new_session=True)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        passed, collected = _junit_results(report) if report.is_file() else ({}, {})
    expected = expected_counts()
    return {name: [passed.get(f"test_hidden_{name}", 0), collected.get(f"test_hidden_{name}", 0),
                   expected.get(name, -1)] for name in names}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--impl", type=Path, help="directory holding the modules (default: the "
                       "references)")
    which.add_argument("--stub", action="store_true", help="modules that return None for every "
                       "name")
    parser.add_argument("--specs", nargs="*", choices=spec_names(), default=spec_names())
    args = parser.parse_args(argv)
    impl = None if args.stub else (args.impl or REFERENCE_DIR)
    results = validate(impl, args.specs)
    ok = True
    for name, (passed, collected, expected) in results.items():
        note = "" if collected == expected else f"  (collected {collected}, COUNTS says {expected})"
        print(f"{name:12} {passed:3}/{expected}{note}")
        ok = ok and passed == collected == expected
    total = sum(r[2] for r in results.values())
    print(json.dumps({"passed": sum(r[0] for r in results.values()), "total": total,
                      "specs": {name: r[0] for name, r in results.items()}}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
