"""How the pipeline harvests a model's capacity: the spec's examples as tests of their
own, new samples beside revisions, and reviews spent on modules whose tests fail."""

from __future__ import annotations

import json
from pathlib import Path

from test_team import (
    GOOD,
    HALF,
    PLAN,
    TESTS,
    approve,
    fenced,
    run_pipeline,
    says,
    versions,
)

from agents.speccases import CASE_PREFIX
from agents.team import Coder
from orchestra.models.base import ModelRequest, ModelResponse

SPEC = ("# add\n\nBuild `calc/add.py` with `add(a: int, b: int) -> int`, tested in "
        "`tests/test_add.py`.\n\n- `add(1, 2) == 3`, `add(2, 2) == 4`.\n")
PLANNED = json.dumps(PLAN)


def plan(_: ModelRequest) -> ModelResponse:
    return says(PLANNED)(_)


async def test_a_passing_module_is_approved_by_its_tests_without_a_review(
        tmp_path: Path) -> None:
    run, tasks, seen = await run_pipeline(tmp_path, {
        "architect": [plan], "tester": [says(fenced("tests/test_add.py", TESTS))],
        "coder": [says(fenced("calc/add.py", GOOD))], "reviewer": []}, spec=SPEC,
        review="failures")
    assert run.status == "completed", run.error
    assert "reviewer" not in seen and [t.role for t in tasks].count("reviewer") == 0
    tests = (tmp_path / "ws/tests/test_add.py").read_text()
    # the spec's two examples were appended as tests of their own, and they ran
    assert f"def {CASE_PREFIX}1" in tests and "_spec_module.add(2, 2) == 4" in tests
    (coder,) = [t for t in tasks if t.role == "coder"]
    assert coder.result["report"]["tests_passed"] == 4


async def test_a_failing_module_still_goes_to_the_reviewer(tmp_path: Path) -> None:
    wrong = "def add(a: int, b: int) -> int:\n    return a - b\n"
    run, _tasks, seen = await run_pipeline(tmp_path, {
        "architect": [plan], "tester": [says(fenced("tests/test_add.py", TESTS))],
        "coder": [*versions("calc/add.py", wrong, Coder.test_rounds),
                  says(fenced("calc/add.py", GOOD))],
        "reviewer": [says(json.dumps({"module": "calc/add.py", "approved": False,
                                      "comments": ["add subtracts"]})), approve]},
        spec=SPEC, review="failures")
    assert run.status == "completed", run.error
    assert len(seen["reviewer"]) == 1  # round 2 passed: approved by its tests
    assert (tmp_path / "ws/calc/add.py").read_text() == GOOD
    # round 1 began greedy; round 2 (its module and the comments in view) samples warm
    first, again = seen["coder"][0].settings, seen["coder"][Coder.test_rounds].settings
    assert first.temperature == 0.0 and again.temperature is not None
    assert again.temperature >= 0.7 and again.seed == 2


async def test_a_failing_answer_is_followed_by_a_fresh_warm_sample_not_a_revision(
        tmp_path: Path) -> None:
    """Revising in view of its answer and a failing assertion, a small model sends the
    same file back; a new sample, warm enough to differ, is what is worth its cost."""
    from orchestra.runtime.retry_sampling import SAMPLE_TEMPERATURE

    run, _tasks, seen = await run_pipeline(tmp_path, {
        "architect": [plan], "tester": [says(fenced("tests/test_add.py", TESTS))],
        "coder": [says(fenced("calc/add.py", HALF)), says(fenced("calc/add.py", GOOD))],
        "reviewer": [approve]}, spec=SPEC)
    assert run.status == "completed", run.error
    assert Coder.test_rounds >= 2 and len(seen["coder"]) == 2
    fresh = seen["coder"][1].messages
    # the new sample sees its task and a short word of what failed, not the answer
    assert not any(m.role == "assistant" for m in fresh[2:])
    assert "again from the start" in fresh[-1].content
    first, second = (r.settings for r in seen["coder"])
    assert second.seed != first.seed and second.temperature == SAMPLE_TEMPERATURE
    assert (tmp_path / "ws/calc/add.py").read_text() == GOOD


async def test_a_module_that_does_not_import_is_revised_in_view_of_its_traceback(
        tmp_path: Path) -> None:
    broken = GOOD + "\nLIMIT = undefined_limit + 1\n"  # NameError at import
    run, _tasks, seen = await run_pipeline(tmp_path, {
        "architect": [plan], "tester": [says(fenced("tests/test_add.py", TESTS))],
        "coder": [says(fenced("calc/add.py", broken)), says(fenced("calc/add.py", GOOD))],
        "reviewer": [approve]}, spec=SPEC)
    assert run.status == "completed", run.error
    revision = seen["coder"][1].messages
    assert any("undefined_limit" in m.content for m in revision if m.role == "assistant")
    assert "NameError" in revision[-1].content and "import calc.add" in revision[-1].content
    assert (tmp_path / "ws/calc/add.py").read_text() == GOOD


async def test_a_tester_that_never_writes_usable_tests_leaves_the_specs_examples(
        tmp_path: Path) -> None:
    no_import = "def test_it():\n    assert True\n"
    run, _tasks, seen = await run_pipeline(tmp_path, {
        "architect": [plan], "tester": [says(fenced("tests/test_add.py", no_import))] * 3,
        "coder": [says(fenced("calc/add.py", GOOD))], "reviewer": [approve]}, spec=SPEC)
    assert run.status == "completed", run.error
    assert len(seen["tester"]) == 3
    tests = (tmp_path / "ws/tests/test_add.py").read_text()
    assert "def test_it" not in tests and tests.count(f"def {CASE_PREFIX}") == 2


async def test_tests_that_leave_out_a_spec_example_are_taken_as_they_are(
        tmp_path: Path) -> None:
    """The tester's tests are probes: nothing read from the spec sends them back (the
    spec's own examples are appended as tests of their own)."""
    spec = ("# greet\n\nBuild `calc/add.py` with `add(a: int, b: int) -> int`, tested in "
            "`tests/test_add.py`.\n\n- `add(1, 2)` is `3`; shown as `\"3\"` by `show(3)`.\n")
    run, _, seen = await run_pipeline(tmp_path, {
        "architect": [plan], "tester": [says(fenced("tests/test_add.py", TESTS.replace(
            '"""shown as "3"."""\n', "")))],
        "coder": [says(fenced("calc/add.py", GOOD))], "reviewer": [approve]}, spec=spec)
    assert run.status == "completed", run.error
    assert len(seen["tester"]) == 1


async def test_past_the_time_budget_a_module_keeps_its_best_code_and_the_run_ends(
        tmp_path: Path) -> None:
    run, tasks, seen = await run_pipeline(tmp_path, {
        "architect": [plan], "tester": [says(fenced("tests/test_add.py", TESTS))],
        "coder": [says(fenced("calc/add.py", HALF))], "reviewer": []},
        spec=SPEC, review="failures", time_budget=0.5)
    assert run.status == "completed", run.error
    # one answer, no test rounds, no review: its best (only) code stays, the module failed
    assert len(seen["coder"]) == 1 and "reviewer" not in seen
    assert (tmp_path / "ws/calc/add.py").read_text() == HALF
    (coder,) = [t for t in tasks if t.role == "coder"]
    assert coder.result["out_of_time"] is True


async def test_a_bad_time_budget_is_refused_by_name(tmp_path: Path) -> None:
    import pytest

    from agents.pipeline import build_pipeline
    from orchestra import UserError

    with pytest.raises(UserError, match="time_budget 'soon' is not a duration"):
        build_pipeline({"spec": SPEC, "workspace": str(tmp_path), "time_budget": "soon"})


async def test_an_architect_whose_reply_is_no_plan_leaves_the_specs_own_plan(
        tmp_path: Path) -> None:
    cut_off = json.dumps({"modules": [{**PLAN["modules"][0], "path": "other/add.py"}]})[:60]
    run, tasks, seen = await run_pipeline(tmp_path, {
        "architect": [says(cut_off)], "tester": [says(fenced("tests/test_add.py", TESTS))],
        "coder": [says(fenced("calc/add.py", GOOD))], "reviewer": [approve]}, spec=SPEC)
    assert run.status == "completed", run.error
    assert len(seen["architect"]) == 1
    (architect,) = [t for t in tasks if t.role == "architect"]
    (module,) = architect.result["modules"]
    assert (module["path"], module["test_path"], module["public_api"]) == (
        "calc/add.py", "tests/test_add.py", ["add(a: int, b: int) -> int"])
    assert (tmp_path / "ws/calc/add.py").read_text() == GOOD


def test_the_tester_of_one_module_reads_the_specs_opening_and_that_modules_part() -> None:
    from agents.briefs import tester_brief
    from agents.coderasks import module_request
    from agents.specfacts import read_spec

    spec = ("# calc\n\nTwo modules.\n\n## `calc/tokens.py`\n\n`tokens(text: str) -> list`"
            "\n\n- `tokens(\"1 2\")` is `[\"1\", \"2\"]`.\n\n## `calc/evaluate.py`\n\n"
            "`evaluate(text: str) -> int`\n\n- `evaluate(\"1 / 0\")` raises "
            "`ZeroDivisionError`.\n")
    api = ["tokens(text: str) -> list"]
    task = {"spec": spec, "stated": read_spec(spec).stated("calc/tokens.py", api).model_dump(),
            "module": {"path": "calc/tokens.py", "test_path": "tests/t.py", "purpose": "split",
                       "public_api": api}}
    brief = tester_brief(task)
    assert "Two modules." in brief and 'tokens("1 2")' in brief
    assert "ZeroDivisionError" not in brief and "evaluate" not in brief
    assert "ZeroDivisionError" in module_request(spec, "calc/tokens.py", {})  # the coder: all


async def test_an_answer_that_passes_every_test_the_spec_vouches_for_is_accepted(
        tmp_path: Path) -> None:
    # the tester's own test_zero is wrong; the spec's cases pass: after one revision the
    # answer is accepted (early stop), without a review: the reviewer is for code and
    # trusted tests that disagree
    wrong = TESTS.replace("assert add(0, 0) == 0", "assert add(0, 0) == 1")
    run, tasks, seen = await run_pipeline(tmp_path, {
        "architect": [plan], "tester": [says(fenced("tests/test_add.py", wrong))],
        "coder": versions("calc/add.py", GOOD, 2), "reviewer": []},
        spec=SPEC, review="failures")
    assert run.status == "completed", run.error
    assert len(seen["coder"]) == 2 and "reviewer" not in seen
    (coder,) = [t for t in tasks if t.role == "coder"]
    assert coder.result["accepted"] is True and coder.result["report"]["passed"] is False


def test_past_the_budget_corrected_tests_start_no_new_coder_round() -> None:
    from types import SimpleNamespace

    from agents.pipeline import _tests_route
    from agents.roles import TestsAnswer
    from agents.workclock import WorkClock
    from orchestra.store import Writes

    # posted when the run had worked 500 s: a budget of 400 is spent, one of 1100 is not
    task = SimpleNamespace(input={"module": PLAN["modules"][0], "round": 2, "spec": SPEC,
                                  "stated": {"section": SPEC}, "code": GOOD, "worked": 500.0})
    answer = TestsAnswer(files={"tests/test_add.py": TESTS})
    late, on_time = Writes(), Writes()
    _tests_route(400.0, WorkClock())(answer, task, late)  # type: ignore[arg-type]
    _tests_route(1100.0, WorkClock())(answer, task, on_time)  # type: ignore[arg-type]
    assert not late.handoffs and "time budget is spent" in late.notes[0].body
    assert [h.to_role for h in on_time.handoffs] == ["coder"]
    assert on_time.handoffs[0].payload["worked"] >= 500.0


async def test_late_unusable_answers_end_the_task_with_the_best_tested_one(
        tmp_path: Path) -> None:
    unusable = [says(fenced("calc/add.py", f"Build the module, take {n}.\n"))
                for n in range(Coder.keep_best_after)]
    run, tasks, seen = await run_pipeline(tmp_path, {
        "architect": [plan], "tester": [says(fenced("tests/test_add.py", TESTS))],
        "coder": [says(fenced("calc/add.py", HALF)), *unusable],
        "reviewer": [says(json.dumps({"module": "calc/add.py", "approved": False,
                                      "comments": ["add returns 3"]}))]},
        spec=SPEC, review="failures", max_rounds=1)
    assert run.status == "completed", run.error
    assert len(seen["coder"]) == 1 + Coder.keep_best_after < 1 + Coder.output_retries
    assert (tmp_path / "ws/calc/add.py").read_text() == HALF
    (coder,) = [t for t in tasks if t.role == "coder"]
    assert coder.result["files"]["calc/add.py"] == HALF and coder.attempt == 1


async def test_feedback_names_the_failing_spec_examples_first(tmp_path: Path) -> None:
    run, _, seen = await run_pipeline(tmp_path, {
        "architect": [plan], "tester": [says(fenced("tests/test_add.py", TESTS))],
        "coder": [says(fenced("calc/add.py", HALF)), says(fenced("calc/add.py", GOOD))],
        "reviewer": []}, spec=SPEC, review="failures")
    assert run.status == "completed", run.error
    told = seen["coder"][1].messages[-1].content
    assert "stated by the spec itself, fail; fix them first:\n- add(2, 2) should be 4; " in told
    # with what the module did instead, in pytest's words
    assert "- add(2, 2) should be 4; got: assert 3 == 4" in told
    assert "add(1, 2) should" not in told  # HALF returns 3: that example passes


def test_the_spec_s_own_examples_rank_first() -> None:
    from agents.decide import Tried, best

    tester_pleased = Tried.of({"score": [9, 10, 0, 2]})  # a tester's wrong tests
    spec_pleased = Tried.of({"score": [5, 10, 2, 2]})  # the spec's two examples
    assert best([tester_pleased, spec_pleased]) == 1
    assert Tried.of({"score": [3, 4, 2]}).trusted == (2, 0)  # an older, shorter score


def test_the_names_a_module_exports_are_module_level_names() -> None:
    """What a module built on it imports (and its candidates are counted on): never
    "class X" or a method (the 1.5B copied ``from stack_lexer import tokenize, class
    LexError`` into three answers in a row when a brief said it)."""
    from agents.specread import import_names

    used = ["tokenize(source: str) -> list", "class LexError(ValueError)",
            "Token(kind: str)", "Token.width() -> int", "Lexer(text: str)", "next() -> str"]
    assert import_names(used) == ["tokenize", "LexError", "Token", "Lexer"]
