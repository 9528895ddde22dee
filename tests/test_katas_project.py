"""The project-scale kata set stays valid: its reference passes every hidden test,
modules whose every name is None fail them all, and each near miss of the reference fails
at least one; the spec names its modules in the order they build on each other (the
order the one-shot baseline asks for them)."""

from __future__ import annotations

import ast

from benchmarks.katas import hidden_total, kata_names, load_kata
from benchmarks.katas_project import validate


def test_the_reference_passes_every_hidden_test_stubs_none_and_near_misses_not_all() -> None:
    assert kata_names(validate.SET_DIR) == ["tally"]
    kata = load_kata("tally", validate.SET_DIR)
    reference = validate._files(kata, validate.REFERENCE_DIR)
    total = validate.expected_counts()["tally"]
    assert validate.score(kata, reference) == (total, total) == (hidden_total(kata), 45)
    assert validate.score(kata, validate._files(kata, None)) == (0, total)
    for name in validate.NEAR_MISSES:
        passed, _ = validate.score(kata, validate.near_miss(reference, name))
        assert 0 < passed < total, name


def test_the_spec_is_a_package_of_modules_built_on_the_ones_named_before() -> None:
    kata = load_kata("tally", validate.SET_DIR)
    assert len(kata.modules) >= 6 and kata.tests == ("tests/test_money.py",)
    named = [m.removesuffix(".py").replace("/", ".") for m in kata.modules]
    built_on = 0
    for i, module in enumerate(kata.modules):
        tree = ast.parse((validate.REFERENCE_DIR / module).read_text())
        imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        ours = imported & set(named)
        assert ours <= set(named[:i]), f"{module} imports {ours - set(named[:i])}"
        built_on += bool(ours)
    assert built_on >= 3
