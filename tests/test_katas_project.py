"""The project-scale kata set stays valid: its reference passes every hidden test,
modules whose every name is None fail them all, and each near miss of the reference fails
at least one; the spec names its modules in the order they build on each other (the
order the one-shot baseline asks for them), and the one-shot side writes the package
module by module."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from benchmarks.katas import hidden_total, kata_names, load_kata
from benchmarks.katas_project import validate
from benchmarks.pipeline_quality import main, read_rows

sys.path.insert(0, str(Path(__file__).parent / "models"))
from model_wire import Reply, WireServer


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


def test_the_one_shot_writes_the_package_module_by_module(tmp_path: Path) -> None:
    """Served the reference module by module, the one-shot side writes the package (no
    ``__init__.py``: a namespace package imports as well) and passes every hidden test;
    the last request shows the six modules before it."""
    kata = load_kata("tally", validate.SET_DIR)
    wire = WireServer()
    try:
        wire.add(*(Reply(body={"choices": [{"finish_reason": "stop", "message": {
            "content": f"```python\n{(validate.REFERENCE_DIR / m).read_text()}```"}}]})
            for m in kata.modules))
        out = tmp_path / "q.jsonl"
        assert main(["--model", f"openai-compatible:{wire.url}/v1#fake", "--out", str(out),
                     "--katas", str(validate.SET_DIR), "--sides", "one-shot"]) == 0
        [row] = read_rows(out)
        last = wire.last["messages"][1]["content"]
    finally:
        wire.close()
    assert row["model_calls"] == 7 and row["hidden"] == [45, 45]
    assert row["files"] == sorted(kata.modules)
    shown = [m for m in kata.modules if f"`{m}`:\n\n```python\n" in last]
    assert shown == list(kata.modules[:-1]) and last.endswith(
        "Write `tally/parse.py`. Reply with the complete module in one fenced ```python block.")
