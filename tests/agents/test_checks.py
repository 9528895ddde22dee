"""The stock roles' answers checked against the workspace and the spec."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.checks import check_plan, spec_paths
from agents.roles import ModuleSpec, ProjectPlan
from agents.workspace import Workspace

SPEC = """Build `kata/roman.py` with `to_roman(n)`. Write its pytest file
`tests/test_roman.py`. Also `kata/__init__.py` may exist."""


def plan(path: str = "kata/roman.py", test_path: str = "tests/test_roman.py",
         *more: ModuleSpec) -> ProjectPlan:
    return ProjectPlan(modules=[ModuleSpec(path=path, purpose="p", public_api=["f()"],
                                           test_path=test_path), *more])


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return Workspace(tmp_path)


def test_spec_paths() -> None:
    assert spec_paths(SPEC) == (["kata/roman.py", "kata/__init__.py"], ["tests/test_roman.py"])
    assert spec_paths("see a/b.py, tests/test_b.py and c_test.py; not x.pyc") == (
        ["a/b.py"], ["tests/test_b.py", "c_test.py"])


@pytest.mark.parametrize(("bad", "problem"), [
    (plan("/etc/roman.py"), "is absolute"),
    (plan("../roman.py"), "contains '..'"),
    (plan("kata/roman"), "is not a Python file path"),
    (plan(test_path="../test_roman.py"), "contains '..'"),
])
def test_plans_unusable_as_data_are_refused(ws: Workspace, bad: ProjectPlan,
                                            problem: str) -> None:
    assert problem in check_plan(bad, ws)


def test_plans_the_spec_does_not_name_are_no_problem(ws: Workspace) -> None:
    """Nothing read from the spec refuses a plan (issue 46)."""
    assert check_plan(plan(), ws) == ""
    assert check_plan(plan("./kata/roman.py"), ws) == ""
    assert check_plan(plan("textkit/wrap.py", "tests/test_wrap.py"), ws) == ""


def test_a_syntax_error_shows_its_line_and_the_nested_f_string_quote_gets_a_hint() -> None:
    import sys

    from agents.checks import python_problem

    bad = 'def f(n):\n    return [f"{i if i % 3 else "Fizz"}" for i in range(n)]\n'
    problem = python_problem("kata/f.py", bad)
    if sys.version_info >= (3, 12):  # valid there
        assert problem == ""
        return
    assert problem.startswith("not valid Python (line 2:")
    assert "for i in range(n)]" in problem  # the offending line itself
    assert "use the other quote character" in problem
    plain = python_problem("kata/g.py", "x = (\n")
    assert "'x = ('" in plain and "quote" not in plain
    assert python_problem("notes.txt", "x = (") == ""
