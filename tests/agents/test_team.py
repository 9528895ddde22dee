"""The tester, the coder's test loop and the reviewer's routing, with scripted models.

The tester writes the module's tests from the spec; the coder's answer is a fenced
file, its task runs those tests for real and gives failures back as the next turn,
keeping the answer that passed most when its rounds run out; the reviewer sends the
fix to whichever of code and tests is wrong against the spec.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from agents.failures import how_it_failed
from agents.pipeline import build_pipeline
from agents.roles import Review
from agents.team import Coder, Reviewer
from agents.testsplit import failed_tests, guard_imports, split_tests
from agents.workspace import Workspace
from orchestra import Coordinator, FunctionModel, ModelRetry, SQLiteBlackboard, ToolContext, reply
from orchestra.models.base import ModelRequest, ModelResponse

SPEC = ("# add\n\nBuild `calc/add.py` with `add(a: int, b: int) -> int`, tested in "
        "`tests/test_add.py`. Example: `add(1, 2) -> 3`, shown as `\"3\"` by `show(3)`.")
PLAN = {"modules": [{"path": "calc/add.py", "purpose": "add two integers",
                     "public_api": ["add(a: int, b: int) -> int"],
                     "test_path": "tests/test_add.py"}]}
TESTS = ('from calc.add import add\n\n\ndef test_add() -> None:\n    """shown as "3"."""\n'
         "    assert add(1, 2) == 3\n\n\ndef test_zero() -> None:\n    assert add(0, 0) == 0\n")
GOOD = "def add(a: int, b: int) -> int:\n    return a + b\n"
HALF = "def add(a: int, b: int) -> int:\n    return 3\n"  # passes one test of two
BAD = "def add(a: int, b: int) -> int:\n    return 0\n"  # passes the other one
SUB = "\n\ndef sub(a: int, b: int) -> int:\n    return a - b\n"


def fenced(path: str, code: str) -> str:
    return f"{path}\n```python\n{code}```\n"


def role_of(request: ModelRequest) -> str:
    system = request.messages[0].content
    for role, opening in (("architect", "You are the architect"), ("tester", "You write"),
                          ("reviewer", "You review"), ("coder", "You are a helpful assistant")):
        if system.startswith(opening):
            return role
    raise AssertionError(system[:60])


Replies = dict[str, list[Callable[[ModelRequest], ModelResponse]]]


def asked_path(request: ModelRequest, paths: Iterable[str]) -> str:
    """Which of ``paths`` a tester's or coder's task asks for: the line after "# Your
    task" (a brief), else the last paragraph ("Write `x.py`. Reply ...": the one-shot
    request)."""
    text = [m.content for m in request.messages if m.name == "task"][-1]
    line = (text.split("# Your task", 1)[1].split("\n")[2] if "# Your task" in text
            else text.rsplit("\n\n", 1)[-1])
    return next(p for p in paths if p in line)


async def run_pipeline(tmp_path: Path, replies: Replies, spec: str = SPEC,
                       max_rounds: int = 3, review: str = "always",
                       **more: Any) -> tuple[Any, list[Any], dict[str, list[Any]]]:
    """Run the stock pipeline on ``spec`` with scripted replies per role; returns the run,
    its tasks and every request per role."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    seen: dict[str, list[ModelRequest]] = {}

    def model(request: ModelRequest) -> ModelResponse:
        role = role_of(request)
        seen.setdefault(role, []).append(request)
        return replies[role][len(seen[role]) - 1](request)

    run_input = {"spec": spec, "workspace": str(workspace), "max_rounds": max_rounds,
                 "review": review, **more}
    pipeline = build_pipeline(run_input)
    fn = FunctionModel(model, name="scripted")
    store = await SQLiteBlackboard.open(tmp_path / "o.db")
    try:
        run = await Coordinator(store, pipeline,
                                models={r.name: fn for r in pipeline.roles}).run(run_input)
        tasks = await store.list_tasks(run.id)
    finally:
        await store.close()
    return run, tasks, seen


def checks(tmp_path: Path, task_id: str) -> list[dict[str, Any]]:
    """A task's journaled ``check_output`` outcomes, in order (a run of ``run_pipeline``)."""
    with closing(sqlite3.connect(tmp_path / "o.db")) as db:
        rows = db.execute("SELECT output FROM steps WHERE task_id = ? AND status = 'completed'"
                          " AND name = 'check_output' ORDER BY step", (task_id,)).fetchall()
    return [json.loads(o) for (o,) in rows]


def plan(_: ModelRequest) -> ModelResponse:
    return reply(json.dumps(PLAN))


def approve(_: ModelRequest) -> ModelResponse:
    return reply(json.dumps({"module": "calc/add.py", "approved": True, "comments": []}))


def says(text: str) -> Callable[[ModelRequest], ModelResponse]:
    return lambda _: reply(text)


def versions(path: str, code: str, n: int) -> list[Callable[[ModelRequest], ModelResponse]]:
    """``code`` answered ``n`` times, each a new version that behaves alike (an answer
    tried before is not tried again)."""
    return [says(fenced(path, code if i == 0 else f"{code}\n# version {i + 1}\n"))
            for i in range(n)]


async def test_failing_tests_come_back_as_the_next_turn_until_they_pass(tmp_path: Path) -> None:
    run, tasks, seen = await run_pipeline(tmp_path, {
        "architect": [plan], "tester": [says(fenced("tests/test_add.py", TESTS))],
        "coder": [says(fenced("calc/add.py", HALF)), says(fenced("calc/add.py", GOOD))],
        "reviewer": [approve]})
    assert run.status == "completed", run.error
    assert (tmp_path / "ws/calc/add.py").read_text() == GOOD
    written = (tmp_path / "ws/tests/test_add.py").read_text()
    # the tester's tests cut one check apart, then the example the spec states in prose
    # (`add(1, 2)` gives 3) as a test of its own
    assert written.startswith(split_tests(guard_imports(TESTS, "calc.add")))
    assert "_spec_module.add(1, 2) == 3" in written
    second = seen["coder"][1].messages[-1].content  # a new sample, told what failed
    assert "passed 2 of its 3 tests" in second and "test_zero" in second
    (coder,) = [t for t in tasks if t.role == "coder"]
    assert checks(tmp_path, coder.id)[0]["data"]["why"] in second  # journaled too
    # the tester never saw code; the reviewer saw code, tests and the passing report
    assert "def add" not in seen["tester"][0].messages[-1].content
    review = seen["reviewer"][0].messages[-1].content
    assert GOOD.strip() in review and "test_zero" in review and "all pass" in review
    assert coder.result["report"]["passed"] is True and len(coder.result["history"]) == 1


async def test_when_rounds_run_out_the_best_answer_is_kept(tmp_path: Path) -> None:
    tests = TESTS.replace("assert add(0, 0) == 0",
                          "assert add(0, 0) == 0\n    assert add(2, 1) == 3")
    run, tasks, seen = await run_pipeline(tmp_path, {
        "architect": [plan], "tester": [says(fenced("tests/test_add.py", tests))],
        "coder": [says(fenced("calc/add.py", HALF)), *versions("calc/add.py", BAD, 3)],
        "reviewer": [says(json.dumps({"module": "calc/add.py", "approved": False,
                                      "fix": "code", "comments": ["add returns a constant"]}))],
    }, max_rounds=1)
    assert run.status == "completed", run.error
    assert len(seen["coder"]) == Coder.test_rounds == 4
    # test_zero's two asserts became two tests, and the spec's example one more: HALF passes
    # 3 of 4, BAD 1, so HALF is the module left in the workspace
    assert (tmp_path / "ws/calc/add.py").read_text() == HALF
    (coder,) = [t for t in tasks if t.role == "coder"]
    assert coder.result["files"]["calc/add.py"] == HALF
    assert coder.result["report"]["passed"] is False
    assert [h["score"][0] for h in coder.result["history"]] == [3, 1, 1, 1]


async def test_a_review_that_blames_the_tests_goes_to_the_tester(tmp_path: Path) -> None:
    wrong = TESTS.replace("assert add(0, 0) == 0", "assert add(0, 0) == 1")
    run, tasks, seen = await run_pipeline(tmp_path, {
        "architect": [plan],
        "tester": [says(fenced("tests/test_add.py", wrong)), says(fenced("tests/test_add.py",
                                                                          TESTS))],
        "coder": versions("calc/add.py", GOOD, Coder.test_rounds + 1),
        "reviewer": [says(json.dumps({"module": "calc/add.py", "approved": False,
                                      "fix": "tests", "comments": [
                                          "test_zero expects add(0, 0) == 1; 0 + 0 is 0"]})),
                     approve]})
    assert run.status == "completed", run.error
    assert [t.role for t in sorted(tasks, key=lambda t: t.created_at)] == [
        "architect", "tester", "coder", "reviewer", "tester", "coder", "reviewer"]
    redo = seen["tester"][1].messages[-1].content
    assert "add(0, 0) == 1; 0 + 0 is 0" in redo and "assert add(0, 0) == 1" in redo
    assert (tmp_path / "ws/tests/test_add.py").read_text().startswith(
        split_tests(guard_imports(TESTS, "calc.add")))


async def test_functions_written_as_methods_are_told_by_their_test_run(tmp_path: Path
                                                                     ) -> None:
    """No rule read from the spec names the fault: the tests that ran against it do."""
    method = "class Calc:\n    def add(self, a, b):\n        return a + b\n"
    run, _, seen = await run_pipeline(tmp_path, {
        "architect": [plan], "tester": [says(fenced("tests/test_add.py", TESTS))],
        "coder": [says(fenced("calc/add.py", method)), says(fenced("calc/add.py", GOOD))],
        "reviewer": [approve]})
    assert run.status == "completed", run.error
    told = seen["coder"][1].messages[-1].content
    assert "'add' is not defined in module 'calc.add' (the tests import it)" in told


async def test_a_module_built_on_another_is_coded_after_it_with_its_api(tmp_path: Path) -> None:
    spec = ("# calc\n\n## `calc/tokens.py`\n\n`tokens(text: str) -> list[str]`\n\n"
            "## `calc/evaluate.py`\n\n`evaluate(text: str) -> int`, built on `calc.tokens`.\n")
    modules = [
        {"path": "calc/evaluate.py", "purpose": "evaluate", "public_api": [
            "evaluate(text: str) -> int"], "test_path": "tests/test_evaluate.py"},
        {"path": "calc/tokens.py", "purpose": "split", "public_api": [
            "tokens(text: str) -> list[str]"], "test_path": "tests/test_tokens.py"}]
    test_of = {m["path"]: f"from {m['path'][:-3].replace('/', '.')} import "
                          f"{m['public_api'][0].split('(')[0]}\n\n\ndef test_it() -> None:\n"
                          f"    assert {m['public_api'][0].split('(')[0]}('1 2')\n"
               for m in modules}
    code_of = {"calc/tokens.py": "def tokens(text: str) -> list[str]:\n    return text.split()\n",
               "calc/evaluate.py": "from calc.tokens import tokens\n\n\n"
                                   "def evaluate(text: str) -> int:\n"
                                   "    return sum(int(t) for t in tokens(text))\n"}

    def by_module(what: dict[str, str], label: Callable[[str], str]
                  ) -> Callable[[ModelRequest], ModelResponse]:
        def answer(request: ModelRequest) -> ModelResponse:
            path = asked_path(request, what)
            return reply(fenced(label(path), what[path]))
        return answer

    path_of_test = {m["path"]: m["test_path"] for m in modules}
    run, tasks, seen = await run_pipeline(tmp_path, {
        "architect": [says(json.dumps({"modules": modules}))],
        "tester": [by_module(test_of, lambda p: path_of_test[p])] * 2,
        "coder": [by_module(code_of, lambda p: p)] * 2,
        "reviewer": [lambda r: reply(json.dumps({"module": "x", "approved": True}))] * 2,
    }, spec=spec)
    assert run.status == "completed", run.error
    coders = sorted((t for t in tasks if t.role == "coder"), key=lambda t: t.created_at)
    assert [t.input["module"]["path"] for t in coders] == ["calc/tokens.py", "calc/evaluate.py"]
    brief = seen["coder"][1].messages[-1].content  # shown the module it builds on, whole
    assert f"`calc/tokens.py`:\n\n```python\n{code_of['calc/tokens.py']}```" in brief


async def test_a_rejection_without_comments_is_sent_back(tmp_path: Path) -> None:
    reviewer = Reviewer(Workspace(tmp_path))
    ctx = ToolContext(run_id="r", task_id="t", agent_id="r/reviewer", role="reviewer",
                      step=1, idempotency_key="k", board=None,  # type: ignore[arg-type]
                      task_input={"module": PLAN["modules"][0],  # type: ignore[index]
                                  "stated": {"section": ""}})
    with pytest.raises(ModelRetry, match="without saying which"):
        await reviewer.check_output(ctx, Review(module="calc/add.py", approved=False,
                                                comments=["  "]))
    await reviewer.check_output(ctx, Review(module="calc/add.py", approved=False,
                                            comments=["add(1, 2) returns 4; return a + b"]))


def test_the_architect_is_told_which_files_exist(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "full" / "kata").mkdir(parents=True)
    (tmp_path / "full" / "kata" / "old.py").write_text("x = 1\n")
    for name, expect in (("empty", []), ("full", ["kata/old.py"])):
        run_input = {"spec": "s", "workspace": str(tmp_path / name)}
        (first,) = build_pipeline(run_input).start(run_input)
        assert first.role == "architect"
        assert first.input == {"spec": "s", "workspace_files": expect}


def test_code_must_be_a_module_or_a_test_file_not_just_python() -> None:
    from agents.checks import code_problem

    # a path typed where code belongs parses (as a division): it is still refused
    assert "defines no test function" in code_problem("tests/test_add.py",
                                                      "tests/test_add.py", tests=True)
    assert "defines no function or class" in code_problem("calc/add.py", "calc/add.py",
                                                          tests=False)
    assert code_problem("tests/test_add.py", TESTS, tests=True) == ""
    assert code_problem("calc/add.py", GOOD, tests=False) == ""
    assert "not valid Python" in code_problem("calc/add.py", "def f(:", tests=False)


def test_a_spec_section_is_the_part_about_its_module() -> None:
    from agents.checks import spec_section

    spec = ("# kata\n\n## `a/x.py`\n\n`\"aaabcc\"` becomes `\"3a1b2c\"`; `\"\"` stays.\n\n"
            "## `a/y.py`\n\n`1994` is `\"MCMXCIV\"`.\n")
    assert "aaabcc" in spec_section(spec, "a/x.py")
    assert "MCMXCIV" not in spec_section(spec, "a/x.py")


def test_the_specs_own_signatures_are_the_public_api() -> None:
    from agents.specapi import spec_signatures

    spec = ("# kit\n\n## `kit/a.py`\n\n`to_roman(n: int) -> str`; `to_roman(4)` is `\"IV\"`.\n\n"
            "## `kit/b.py`\n\n`Inventory()` with `add(item: str, quantity: int) -> None` and "
            "`items()`; `add(\"x\", 2)` then `items()` is `[(\"x\", 2)]`.\n")
    assert spec_signatures(spec, "kit/a.py", ["kit/b.py"]) == ["to_roman(n: int) -> str"]
    api = spec_signatures(spec, "kit/b.py", ["kit/a.py"])
    assert api == ["Inventory()", "add(item: str, quantity: int) -> None", "items()"]


def test_checks_of_one_test_are_cut_apart_and_told_apart_by_the_spec() -> None:
    from agents.moduletask import trusted
    from agents.speccases import CASE_PREFIX
    from agents.testsplit import failed_tests

    text = ("import pytest\nfrom k.r import r\n\n\ndef test_r():\n    \"\"\"doc\"\"\"\n"
            "    assert r(1) == 'I'\n    assert r(501) == 'DIXI'\n"
            "    with pytest.raises(ValueError):\n        r(0)\n\n\n"
            "def test_state():\n    x = r(2)\n    assert x == 'II'\n")
    split = split_tests(text)
    assert "def test_r_1():\n    assert r(1) == 'I'" in split
    assert "def test_r_3():\n    with pytest.raises(ValueError):\n        r(0)" in split
    assert "def test_state():\n    x = r(2)" in split  # shared state: left whole
    # only the tests written from the spec's stated examples are trusted; a model's
    # test that quotes the spec is a probe like the others
    assert trusted(split) == set()
    assert trusted(f"{split}\n\ndef {CASE_PREFIX}1():\n    assert r(1) == 'I'\n") == {
        f"{CASE_PREFIX}1"}
    assert failed_tests("FAILED tests/t.py::test_r_2 - assert\nERROR tests/t.py::test_x[1]") \
        == {"test_r_2", "test_x"}


def test_a_module_with_a_fault_only_running_shows_is_a_candidate() -> None:
    """An attribute that hides a method (``self.items`` beside ``def items``) is no reason
    to refuse a module that parses: its test run shows the calls that fail."""
    from agents.checks import code_problem

    shadow = ("class Inventory:\n    def __init__(self):\n        self.items = {}\n\n"
              "    def items(self):\n        return sorted(self.items.items())\n")
    assert code_problem("kata/inventory.py", shadow, tests=False) == ""


def test_a_raises_block_whose_error_a_later_check_reads_stays_whole() -> None:
    text = ("import pytest\n\n\ndef test_e():\n    with pytest.raises(ValueError) as e:\n"
            "        f()\n    assert str(e.value) == 'x'\n")
    assert split_tests(text) == text


def test_a_name_the_tests_guess_fails_only_the_tests_that_use_it() -> None:
    text = "from calc.add import add, Oops\nimport os\n\n\ndef test_a():\n    assert add\n"
    guarded = guard_imports(text, "calc.add")
    assert guarded.startswith("import calc.add as _tested_module\n\ndef _not_in_module(name):")
    assert guarded.endswith(
        "\nadd = getattr(_tested_module, 'add', _not_in_module('add'))\n"
        "Oops = getattr(_tested_module, 'Oops', _not_in_module('Oops'))\nimport os\n\n\n"
        "def test_a():\n    assert add\n")
    assert guard_imports(guarded, "calc.add") == guarded
    assert guard_imports("def broken(:\n", "calc.add") == "def broken(:\n"


async def test_a_name_the_module_lacks_fails_by_its_name(tmp_path: Path) -> None:
    """Its tests fail saying which name the module lacks (not "'NoneType' object is not
    callable", which a 1.5B model never read as "write parse_item"), in the line the
    coder's feedback quotes; the other tests pass."""
    from agents.moduletask import first_failure, score
    from agents.testrunner import run_pytest

    (tmp_path / "tally").mkdir()
    (tmp_path / "tally" / "items.py").write_text("def total(xs):\n    return sum(xs)\n")
    uses = {"call": "parse_item('a 1')", "keywords": "parse_item(text='a')",
            "attribute": "Item.price", "iterate": "list(Item)", "compare": "LIMIT == 3",
            "truth": "LIMIT", "isinstance": "isinstance(3, Item)"}
    tests = "from tally.items import total, parse_item, Item, LIMIT\n\n\n" + "".join(
        f"def test_{use}():\n    assert {expr}\n\n\n" for use, expr in uses.items()
    ) + "def test_total():\n    assert total([1, 2]) == 3\n"
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_items.py").write_text(guard_imports(tests, "tally.items"))
    run = await run_pytest(tmp_path)
    report: dict[str, Any] = {"tests_passed": run.tests_passed, "tests_failed": run.tests_failed,
                              "tests_errors": run.tests_errors, "output": run.output}
    assert score(report) == [1, 8, 0, 0]
    assert failed_tests(report["output"]) == {f"test_{use}" for use in uses}
    for use, expr in uses.items():
        name = next(n for n in ("parse_item", "Item", "LIMIT") if n in expr)
        assert how_it_failed(report["output"], f"test_{use}") == (
            f"AttributeError: {name!r} is not defined in module 'tally.items' (the tests "
            "import it)"), use
    first = first_failure(report)  # pytest cut its summary line at 80 columns
    assert first == ("FAILED tests/test_items.py::test_call - AttributeError: 'parse_item' "
                     "is not defined in module 'tally.items' (the tests import it)")


def test_tests_cut_off_at_the_token_limit_keep_their_complete_functions() -> None:
    from agents.team import Tester

    cut = ("Here:\n\ntests/test_add.py\n```python\nfrom calc.add import add\n\n\n"
           "def test_one():\n    assert add(1, 2) == 3\n\n\n@pytest.mark.x\ndef test_two():\n"
           "    assert add(0, 0) == 0\n\n\ndef test_three():\n    assert add(2, ")
    answer = Tester.answer.parse(cut, truncated=True, task_input={
        "module": PLAN["modules"][0], "stated": {"section": ""}})
    kept = answer.files["tests/test_add.py"]  # type: ignore[attr-defined]
    assert "def test_two" in kept and "test_three" not in kept


def test_tests_cut_off_before_one_complete_test_say_so() -> None:
    from agents.team import Tester

    task = {"module": PLAN["modules"][0], "spec": SPEC, "stated": {"section": SPEC}}
    answer = Tester.answer.parse("tests/test_add.py\n```python\ndef test_one():\n    assert (",
                                 truncated=True, task_input=task)
    assert answer.cut_off and answer.files == {"tests/test_add.py": ""}  # type: ignore[attr-defined]


def test_tests_cut_off_inside_their_only_test_keep_its_complete_statements() -> None:
    """HumanEval/79 with the 1.5B: one test function of asserts ran to the cap. Its
    complete asserts are tests; the line the cut fell in is not (``assert add(27)``
    parses, but is not the check it was becoming)."""
    from agents.team import Tester

    task = {"module": PLAN["modules"][0], "spec": SPEC, "stated": {"section": SPEC}}
    cut = ("tests/test_add.py\n```python\nfrom calc.add import add\n\n\ndef test_add():\n"
           "    assert add(1, 2) == 3\n    assert add(2, 2) == (\n        4)\n"
           "    assert add(27)")
    answer = Tester.answer.parse(cut, truncated=True, task_input=task)
    kept = answer.files["tests/test_add.py"]  # type: ignore[attr-defined]
    assert answer.cut_off  # type: ignore[attr-defined]
    assert "add(1, 2) == 3" in kept and "4)" in kept and "add(27)" not in kept
    for nothing in ("def test_add():\n    assert add(27)",  # only the line cut in
                    "def test_add():\n    \"\"\"Adds.\"\"\"\n    x = (",  # no statement
                    "def add_helper():\n    return 1\n    x"):  # not a test
        answer = Tester.answer.parse(f"tests/test_add.py\n```python\n{nothing}",
                                     truncated=True, task_input=task)
        assert answer.files == {"tests/test_add.py": ""}  # type: ignore[attr-defined]


async def test_a_tester_cut_off_inside_its_one_test_of_every_name_is_not_asked_again(
        tmp_path: Path) -> None:
    cut = ("tests/test_add.py\n```python\nfrom calc.add import add\n\n\ndef test_add():\n"
           "    assert add(1, 2) == 3\n    assert add(0, 0) == 0\n    assert add(5, ")
    run, _tasks, seen = await run_pipeline(tmp_path, {
        "architect": [plan], "tester": [lambda _: ModelResponse(cut, finish_reason="length")],
        "coder": [says(fenced("calc/add.py", GOOD))], "reviewer": [approve]})
    assert run.status == "completed", run.error
    assert len(seen["tester"]) == 1  # every name is called: the rest is not asked
    tests = (tmp_path / "ws/tests/test_add.py").read_text()
    assert "add(0, 0) == 0" in tests and "add(5, " not in tests


_CUT = ("tests/test_add.py\n```python\nfrom calc.add import add\n\n\ndef test_one():\n"
        "    assert add(1, 2) == 3\n\n\ndef test_two():\n    assert add(2, ")


async def test_a_tester_cut_off_keeps_its_tests_and_is_asked_for_the_rest_once(
        tmp_path: Path) -> None:
    """The plan's ``sub`` is called by no kept test: the rest is asked for."""
    rest = ("tests/test_add.py\n```python\nfrom calc.add import add\n\n\ndef test_one():\n"
            "    assert add(2, 2) == 4\n\n\ndef test_three():\n    assert add(0, ")
    spec = SPEC.replace("with `add(a: int, b: int) -> int`",
                        "with `add(a: int, b: int) -> int` and `sub(a: int, b: int) -> int`")
    run, _tasks, seen = await run_pipeline(tmp_path, {
        "architect": [plan],
        "tester": [lambda _: ModelResponse(_CUT, finish_reason="length"),
                   lambda _: ModelResponse(rest, finish_reason="length")],
        "coder": [says(fenced("calc/add.py", GOOD + SUB))], "reviewer": [approve]}, spec=spec)
    assert run.status == "completed", run.error
    assert len(seen["tester"]) == 2  # the rest asked for once; cut off again, it is taken
    assert "cut off at the token limit" in seen["tester"][1].messages[-1].content
    tests = (tmp_path / "ws/tests/test_add.py").read_text()
    assert "add(1, 2) == 3" in tests and "def test_one_rest" in tests
    assert "add(2, 2) == 4" in tests and "test_three" not in tests


async def test_a_tester_cut_off_after_testing_every_name_is_not_asked_again(
        tmp_path: Path) -> None:
    """Every public name of the plan is called by a kept test: the tests are what was
    kept, with no second request (a small model's rest ran on to the cap again)."""
    run, _tasks, seen = await run_pipeline(tmp_path, {
        "architect": [plan], "tester": [lambda _: ModelResponse(_CUT, finish_reason="length")],
        "coder": [says(fenced("calc/add.py", GOOD))], "reviewer": [approve]})
    assert run.status == "completed", run.error
    assert len(seen["tester"]) == 1
    tests = (tmp_path / "ws/tests/test_add.py").read_text()
    assert "add(1, 2) == 3" in tests and "test_two" not in tests


@pytest.mark.parametrize(("code", "reviews"), [(HALF, 1), (BAD, 2)])
async def test_an_approval_stands_unless_a_test_the_spec_vouches_for_fails(
        tmp_path: Path, code: str, reviews: int) -> None:
    """HALF fails only the tester's own add(0, 0) == 0 (a probe): approved at once. BAD
    fails the spec's own example add(1, 2) == 3: the approval is sent back."""
    reject = says(json.dumps({"module": "calc/add.py", "approved": False,
                              "comments": ["add(1, 2) is not 3"]}))
    run, _tasks, seen = await run_pipeline(tmp_path, {
        "architect": [plan], "tester": [says(fenced("tests/test_add.py", TESTS))],
        "coder": versions("calc/add.py", code, Coder.test_rounds),
        "reviewer": [approve, reject]}, max_rounds=1)
    assert run.status == "completed", run.error
    assert len(seen["reviewer"]) == reviews
    if reviews == 2:
        assert "tests the spec vouches for fail" in seen["reviewer"][1].messages[-1].content


async def test_past_the_budget_a_tester_cut_off_keeps_its_tests_without_asking_again(
        tmp_path: Path) -> None:
    cut = ("tests/test_add.py\n```python\nfrom calc.add import add\n\n\ndef test_one():\n"
           "    assert add(1, 2) == 3\n\n\ndef test_two():\n    assert add(2, ")
    run, _tasks, seen = await run_pipeline(tmp_path, {
        "architect": [plan], "tester": [lambda _: ModelResponse(cut, finish_reason="length")],
        "coder": [says(fenced("calc/add.py", GOOD))] * 4, "reviewer": [approve]},
        time_budget=0.5)
    assert run.status == "completed", run.error
    assert len(seen["tester"]) == 1
    tests = (tmp_path / "ws/tests/test_add.py").read_text()
    assert "add(1, 2) == 3" in tests and "test_two" not in tests


async def test_the_coder_asks_for_the_module_to_end_before_its_tests(tmp_path: Path) -> None:
    """Every coder request ends where top-level tests or a main block begin: what the
    server would have written after them is taken out anyway."""
    run, _tasks, seen = await run_pipeline(tmp_path, {
        "architect": [plan], "tester": [says(fenced("tests/test_add.py", TESTS))],
        "coder": [says(fenced("calc/add.py", GOOD + "\n\ndef test_mine():\n    assert 0\n"))],
        "reviewer": [approve]})
    assert run.status == "completed", run.error
    assert seen["coder"][0].settings.stop == ("\ndef test_", "\nif __name__")
    assert (tmp_path / "ws/calc/add.py").read_text().rstrip() == GOOD.rstrip()


def test_a_module_whose_own_names_begin_with_test_is_not_cut_there() -> None:
    from agents.coder import Coder

    task = {"module": {**PLAN["modules"][0], "public_api": [  # type: ignore[dict-item]
        "test_connection(host: str) -> bool"]}, "stated": {"section": ""}}
    settings = Coder(Workspace(Path("."))).settings_for(task)
    assert settings is not None and settings.stop == ("\nif __name__",)
