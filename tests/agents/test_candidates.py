"""What the coder learns of a candidate without a test: is it a stub, what it does when
its calls are run (in a real child process), and how its outputs agree with others'."""

from __future__ import annotations

from pathlib import Path

from agents.agreement import agreement, alike, crashes, own_raises
from agents.importcheck import Imported, check_import
from agents.probe import calls_in_tests, mentions, run_calls
from agents.smoke import smoke_calls, spec_literals
from agents.stubs import stubs
from agents.testsplit import guard_imports


def test_stubs_are_found_by_their_bodies() -> None:
    code = '''
def placeholder(tokens):
    # Implement the evaluation logic here
    pass

def dots(x):
    """Later."""
    ...

def todo(x):
    raise NotImplementedError("soon")

def promises(x) -> int:
    return None

def forgets(x) -> list[int]:
    out = [x]

def real(x) -> int:
    return x + 1

def prints(x) -> None:
    print(x)

def _private(x):
    pass

class Stack:
    def __init__(self):
        pass

    def push(self, x):
        pass

    def size(self) -> int:
        return 0
'''
    assert stubs(code) == ["placeholder", "dots", "todo", "promises", "forgets", "Stack.push"]
    assert stubs("def f(x):\n    return x\n") == [] and stubs("def f(:\n") == []


def test_the_calls_in_tests_are_inputs_their_expected_values_left_out() -> None:
    tests = '''import pytest
from shelf import Shelf, total


def test_add():
    s = Shelf()
    s.add('a', 2)
    assert s.count('a') == 2


def test_total():
    assert total([1, 2]) == pytest.approx(3)
    with pytest.raises(ValueError):
        total(None)


def test_other():
    assert 1 + 1 == 2


class TestTotal:
    def test_empty(self):
        assert total([]) == 0
'''
    preamble, calls = calls_in_tests(tests, ["Shelf", "total"])
    assert preamble == "import pytest\nfrom shelf import Shelf, total"
    assert calls == [("", "Shelf()"), ("s = Shelf()", "s.add('a', 2)"),
                     ("s = Shelf()\ns.add('a', 2)", "s.count('a')"), ("", "total([1, 2])"),
                     ("", "total(None)"), ("", "total([])")]
    assert mentions(tests, ["total"]) and not mentions("import calc.total\n\n\ndef test_it():"
                                                       "\n    assert calc.total\n", ["total"])


def test_a_smoke_run_calls_each_public_function_on_the_specs_literals_and_typed_values() -> None:
    spec = "Merge intervals: `merge([(1, 3), (2, 4)])` gives `[(1, 4)]`; 5 is odd."
    assert [(1, 3), (2, 4)] in spec_literals(spec) and 5 in spec_literals(spec)
    code = ("def merge(items: list) -> list:\n    return items\n\n"
            "def scale(x: int, by: float = 1.0) -> float:\n    return x * by\n\n"
            "def _hidden(x):\n    return x\n\n"
            "class Box:\n    def __init__(self, size: int):\n        self.size = size\n\n"
            "    def grow(self, by: int) -> int:\n        return self.size + by\n")
    calls = smoke_calls(code, spec)
    exprs = [e for _, e in calls]
    assert "merge([(1, 3), (2, 4)])" in exprs and "scale(5)" in exprs
    assert not any("_hidden" in e for e in exprs)
    assert ("obj = Box(5)", "obj.grow(5)") in calls and "Box(5)" in exprs


async def test_a_candidates_calls_run_for_real_and_say_whose_error_it_was(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(
        "def half(n):\n    if n < 0:\n        raise ValueError(n)\n    return n // 2\n\n"
        "def spin():\n    while True:\n        pass\n\n"
        "def many():\n    return (i for i in range(3))\n")
    calls = [("", "half(4)"), ("", "half(-1)"), ("", "half(1, 2)"), ("", "gone(1)"),
             ("", "spin()"), ("x = 3", "half(x)"), ("", "many()")]
    runs = await run_calls(tmp_path, "m.py", "from m import *", calls, per_call=0.5)
    assert runs == {"half(4)": "=2", "half(-1)": "!ValueError", "half(1, 2)": "?TypeError",
                    "gone(1)": "?NameError", "spin()": "~", "x = 3\nhalf(x)": "=1",
                    "many()": "=[0, 1, 2]"}
    (tmp_path / "m.py").write_text("import nowhere\n")
    assert await run_calls(tmp_path, "m.py", "", calls[:1]) == {}


def test_agreement_counts_the_outputs_two_candidates_share() -> None:
    a = {"f(1)": "=1", "f(2)": "=2", "f(0)": "?TypeError"}
    b = {"f(1)": "=1", "f(2)": "=3", "f(0)": "?TypeError"}
    c = {"f(1)": "=1", "f(2)": "=2", "f(0)": "!ZeroDivisionError"}
    # an error outside the candidates' code agrees with nothing
    assert agreement([a, b, c]) == [3, 2, 3]
    assert own_raises(c) == ["f(0)"] and crashes(c, a) == [] and crashes(c, {"f(0)": "=0"})
    assert alike(a, a) and not alike(a, b) and not alike({}, {})
    assert not alike({"f(0)": "!TypeError"}, {"f(0)": "!TypeError"})


async def test_the_calls_of_tests_that_take_the_modules_names_one_by_one_run(
        tmp_path: Path) -> None:
    """A test file whose imports the tester guarded (:func:`guard_imports`) calls the
    module through names it takes one by one: the calls run on them (not a NameError for
    every candidate alike), a name the module lacks raising in the tests' own code."""
    (tmp_path / "m.py").write_text("def half(n):\n    return n // 2\n")
    tests = guard_imports("from m import half, gone\n\n\ndef test_half():\n    assert half(4) "
                          "== 2\n    assert gone(1) == 1\n", "m")
    preamble, calls = calls_in_tests(tests, ["half", "gone"])
    assert calls == [("", "half(4)"), ("", "gone(1)")]
    assert await run_calls(tmp_path, "m.py", preamble, calls) == {
        "half(4)": "=2", "gone(1)": "?AttributeError"}


async def test_importing_a_candidate_says_which_planned_names_it_defines(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text(
        "print('@@ noise', end='')\nLIMIT = 3\n\n\ndef half(n):\n    return n // 2\n\n\n"
        "class Item:\n    def price(self):\n        return 1\n")
    done = await check_import(tmp_path, "pkg/m.py", ["half", "Item", "price", "parse_item",
                                                     "LIMIT"])
    assert done == Imported("", ("half", "Item", "LIMIT"))
    (tmp_path / "pkg" / "m.py").write_text("import nowhere\n")
    failed = await check_import(tmp_path, "pkg/m.py", ["half"])
    assert failed.defines == () and "No module named 'nowhere'" in failed.error
