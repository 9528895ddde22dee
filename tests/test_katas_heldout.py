"""The held-out kata set stays consistent: its references pass every hidden test.

(That stubs fail them all is checked by hand: ``python -m benchmarks.katas_heldout.validate
--stub``; see the set's README.)"""

from __future__ import annotations

from benchmarks.katas_heldout import validate


def test_references_pass_every_hidden_test() -> None:
    names = validate.spec_names()
    results = validate.validate(validate.REFERENCE_DIR, names)
    assert len(names) >= 4
    assert set(validate.expected_counts()) == set(names)
    failing = {name: r for name, r in results.items() if not r[0] == r[1] == r[2]}
    assert not failing, f"[passed, collected, COUNTS] per spec: {failing}"


def test_every_spec_names_the_modules_its_reference_has() -> None:
    for name in validate.spec_names():
        modules = validate.spec_modules(name)
        assert modules, f"{name}.md names no module in backticks"
        missing = [m for m in modules if not (validate.REFERENCE_DIR / m).is_file()]
        assert not missing, f"{name}: no reference for {missing}"

