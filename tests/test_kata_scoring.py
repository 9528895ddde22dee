"""Scoring hidden tests: one module that cannot be imported fails its own tests only."""

from __future__ import annotations

from pathlib import Path

from benchmarks.katas import run_pytest


def test_an_import_error_in_one_hidden_file_does_not_zero_the_others(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "good.py").write_text("def one():\n    return 1\n")
    (pkg / "bad.py").write_text("from pkg.good import two\n")  # a name the module lacks
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    (hidden / "test_hidden_good.py").write_text(
        "from pkg.good import one\n\ndef test_a():\n    assert one() == 1\n\n"
        "def test_b():\n    assert one() == 2\n")
    (hidden / "test_hidden_bad.py").write_text(
        "from pkg.bad import two\n\ndef test_c():\n    assert two() == 2\n")
    passed, ran = run_pytest(tmp_path, "hidden", plugins=False)
    assert passed == 1
    assert ran == 3  # the two tests that ran and the file that could not be collected
