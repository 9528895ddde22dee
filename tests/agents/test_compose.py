"""A composite of answers: each public name from the answer whose tests of it pass most
(pure, so no pytest is run here except by the pipeline test at the end)."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from test_team import approve, fenced, run_pipeline, says

from agents.compose import Answer, compose, name_tests
from orchestra.models.base import ModelRequest, ModelResponse

TESTS = """from shapes import area, perimeter, Box


def test_area():
    assert area(2, 3) == 6


def test_area_zero():
    assert area(0, 3) == 0


def test_perimeter():
    assert perimeter(2, 3) == 10


def test_box():
    assert Box(2).side == 2
"""

ONE = '''"""Shapes."""
import math

SCALE = 1


def area(w, h):
    return w * h * SCALE


def perimeter(w, h):
    return w + h


class Box:
    def __init__(self, side):
        self.side = side
'''

TWO = '''import functools

FACTOR = 2


def _twice(x):
    return x * FACTOR


def area(w, h):
    return w + h


def perimeter(w, h):
    return _twice(w + h)
'''


def names(code: str) -> list[str]:
    return [getattr(n, "name", "") for n in ast.parse(code).body]


def test_tests_are_attributed_to_the_names_they_use() -> None:
    got = name_tests(TESTS + "\ndef test_mod():\n    import shapes\n    shapes.area(1, 1)\n",
                       ["area", "perimeter", "Box"])
    assert got == {"area": {"test_area", "test_area_zero", "test_mod"},
                   "perimeter": {"test_perimeter"}, "Box": {"test_box"}}


def test_each_name_comes_from_the_answer_that_passes_its_tests() -> None:
    answers = [Answer(ONE, frozenset({"test_perimeter"})),
               Answer(TWO, frozenset({"test_area", "test_box"}))]
    code = compose(answers, 0, TESTS, ["area", "perimeter", "Box"])
    assert code is not None
    ns: dict[str, object] = {}
    exec(compile(code, "shapes.py", "exec"), ns)
    area, perimeter, box = ns["area"], ns["perimeter"], ns["Box"]
    assert area(2, 3) == 6 and perimeter(2, 3) == 10 and box(2).side == 2  # type: ignore[operator]
    # the donor's helper and constant come with its function, its import at the top
    assert "def _twice" in code and "FACTOR = 2" in code and "import functools" in code
    assert code.index("import functools") < code.index("SCALE = 1")
    assert code.startswith('"""Shapes."""')
    assert names(code).count("perimeter") == 1 and "return w + h\n\n\ndef _twice" not in code


def test_no_composite_when_the_best_answer_is_best_at_every_name() -> None:
    answers = [Answer(ONE, frozenset({"test_perimeter"})),
               Answer(TWO, frozenset({"test_area", "test_perimeter", "test_box"}))]
    assert compose(answers, 0, TESTS, ["area", "perimeter", "Box"]) is None
    assert compose(answers[:1], 0, TESTS, ["area", "perimeter", "Box"]) is None


def test_a_trusted_test_outweighs_any_number_of_others() -> None:
    """Weights first: the one test the spec vouches for decides a name's home."""
    answers = [Answer(ONE, frozenset({"test_area"})),
               Answer(TWO, frozenset({"test_area_zero", "test_perimeter"}))]
    assert compose(answers, 0, TESTS, ["area"]) is None  # 1 test each: the base stays
    code = compose(answers, 0, TESTS, ["area"], [{"test_area"}])
    assert code is not None and "return w + h" in code.split("def area")[1].split("def ")[0]


def test_a_name_the_base_lacks_is_added_and_clashing_helpers_give_no_composite() -> None:
    lacking = "def area(w, h):\n    return w * h\n"
    code = compose([Answer(lacking, frozenset({"test_perimeter"})),
                    Answer(TWO, frozenset({"test_area"}))], 0, TESTS, ["area", "perimeter"])
    assert code is not None and names(code)[:4] == ["", "area", "", "_twice"]
    assert code.startswith("import functools\n\ndef area") and "h\n\n\nFACTOR" in code
    clash = ONE.replace("SCALE = 1", "SCALE = 1\nFACTOR = 3")
    assert compose([Answer(clash, frozenset({"test_perimeter"})),
                    Answer(TWO, frozenset())], 0, TESTS, ["perimeter"]) is None


def test_answers_that_do_not_parse_give_no_composite() -> None:
    assert compose([Answer("def (:", frozenset()), Answer(TWO, frozenset())], 0, TESTS,
                   ["area"]) is None
    twice = "def area(w, h):\n    return 1\n\n\ndef area(w, h):\n    return w * h\n"
    assert compose([Answer(ONE, frozenset({"test_area"})), Answer(twice, frozenset())],
                   0, TESTS, ["area"]) is None


SPEC = ("# shapes\n\nBuild `shapes.py` with `area(w: int, h: int) -> int` and "
        "`perimeter(w: int, h: int) -> int`, tested in `tests/test_shapes.py`.\n")
PLAN = {"modules": [{"path": "shapes.py", "purpose": "areas and perimeters",
                     "public_api": ["area(w: int, h: int) -> int",
                                    "perimeter(w: int, h: int) -> int"],
                     "test_path": "tests/test_shapes.py"}]}
SHAPE_TESTS = ("from shapes import area, perimeter\n\n\ndef test_area() -> None:\n"
               "    assert area(2, 3) == 6\n\n\ndef test_perimeter() -> None:\n"
               "    assert perimeter(2, 3) == 10\n")
AREA_RIGHT = "def area(w, h):\n    return w * h\n\n\ndef perimeter(w, h):\n    return w + h\n"
PERIMETER_RIGHT = ("def area(w, h):\n    return w + h\n\n\n"
                   "def perimeter(w, h):\n    return 2 * (w + h)\n")


@pytest.mark.parametrize("spec", [SPEC, SPEC + "\nFor example, `perimeter(2, 3)` returns `10`.\n"],
                         ids=["no-answer-passes", "accepted-on-the-spec-tests"])
async def test_the_coder_takes_a_composite_of_two_answers_each_right_in_one_function(
        tmp_path: Path, spec: str) -> None:
    """Two answers, each right in one function: the module written is both right ones,
    after two model calls (no third answer asked for). With a stated example of
    ``perimeter``, the second answer passes it (so it is accepted) but fails the tester's
    test of ``area``, which the first passed: the composite is taken instead."""
    def plan(_: ModelRequest) -> ModelResponse:
        return says(json.dumps(PLAN))(_)

    run, tasks, seen = await run_pipeline(tmp_path, {
        "architect": [plan], "tester": [says(fenced("tests/test_shapes.py", SHAPE_TESTS))],
        "coder": [says(fenced("shapes.py", AREA_RIGHT)),
                  says(fenced("shapes.py", PERIMETER_RIGHT))],
        "reviewer": [approve]}, spec=spec)
    assert run.status == "completed", run.error
    assert len(seen["coder"]) == 2
    written = (tmp_path / "ws/shapes.py").read_text()
    ns: dict[str, object] = {}
    exec(compile(written, "shapes.py", "exec"), ns)
    assert ns["area"](2, 3) == 6 and ns["perimeter"](2, 3) == 10  # type: ignore[operator]
    (coder,) = [t for t in tasks if t.role == "coder"]
    assert coder.result["report"]["passed"] is True and coder.result["accepted"] is True
