"""The coder's floor, through the whole pipeline: its first request is the one a user
makes of the model, a module no test calls is still run, a stub never stays where a
real answer exists, and the candidates' agreement decides where no test does."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from test_team import checks, fenced, run_pipeline, says

from agents.pipeline import _code_route
from agents.roles import CodeAnswer
from agents.workclock import WorkClock
from benchmarks.katas import Kata
from benchmarks.one_shot import SYSTEM, module_code, module_prompt
from orchestra.store import Writes

SPEC = ("# intervals\n\nWrite `intervals.py`, tested in `test_intervals.py`. "
        "`merge(items)` merges overlapping (start, end) pairs: `merge([(1, 3), (2, 4)])` "
        "is one interval, and (1, 3) and (3, 5) touch.\n")
PLAN = {"modules": [{"path": "intervals.py", "purpose": "merge", "test_path":
                     "test_intervals.py", "public_api": ["merge(items)"]}]}
# the tester cut off before one test that calls the module
NO_CALL = "import intervals\n\n\ndef test_the_module_imports():\n    assert intervals\n"
CRASHES = ("def merge(items):\n    out = []\n    for i in sorted(items, key=lambda p: p.start):"
           "\n        out.append(i)\n    return out\n")
RIGHT = ("def merge(items):\n    out = []\n    for s, e in sorted(items):\n"
         "        if out and s <= out[-1][1]:\n"
         "            out[-1] = (out[-1][0], max(e, out[-1][1]))\n"
         "        else:\n            out.append((s, e))\n    return out\n")
RIGHT_TOO = RIGHT.replace("out = []", "out: list = []")
STUB = "def merge(items):\n    # Implement the merging here\n    pass\n"
STUB2 = STUB.replace("merging", "merge")  # not the same answer: a repeat is not tried
STUB3 = STUB.replace("pass", "...")


async def test_the_first_request_is_the_one_shot_request_byte_for_byte(
        tmp_path: Path) -> None:
    """Each module's first request is the one-shot baseline's (its system prompt, its
    words, the modules written before it shown whole, nothing of the agent's earlier
    tasks), so the first answer is the baseline's answer: the floor."""
    spec = ("# pair\n\nWrite `base.py` (tested in `test_base.py`): `one()` returns 1. "
            "Then `top.py` (tested in `test_top.py`), built on base.py: `two()` returns "
            "`one() + 1`.\n")
    plan = {"modules": [
        {"path": "base.py", "purpose": "one", "test_path": "test_base.py",
         "public_api": ["one()"]},
        {"path": "top.py", "purpose": "two", "test_path": "test_top.py",
         "public_api": ["two()"], "uses": ["base.py"]}]}
    base, top = "def one():\n    return 1\n", "from base import one\n\n\ndef two():\n" \
        "    return one() + 1\n"
    kata = Kata("pair", tmp_path / "pair.md", tmp_path / "hidden")
    kata.spec.write_text(spec)
    reply = f"```python\n{base}print(one())\n```\n"
    _, _, seen = await run_pipeline(tmp_path, {
        "architect": [says(json.dumps(plan))],
        "tester": [says(fenced("test_base.py", "from base import one\n\n\ndef test_one():"
                               "\n    assert one() == 1\n")),
                   says(fenced("test_top.py", "from top import two\n\n\ndef test_two():"
                               "\n    assert two() == 2\n"))],
        "coder": [says(reply), says(f"```python\n{top}```\n")],
        "reviewer": []}, spec=spec, review="failures")
    asked = [[(m.role, m.content) for m in r.messages] for r in seen["coder"]]
    assert asked[0] == [("system", SYSTEM), ("user", module_prompt(kata, "base.py", {}))]
    # base.py as the model wrote it (its print taken out of the file), as the baseline shows it
    assert (tmp_path / "ws" / "base.py").read_text() == base
    shown = module_code(reply, "base.py", ("top.py", "test_base.py", "test_top.py"))
    assert shown == f"{base}print(one())\n"
    assert asked[1] == [("system", SYSTEM),
                        ("user", module_prompt(kata, "top.py", {"base.py": shown}))]
    # greedy and computed cold, as the baseline asks: a reused prompt cache changes it
    assert all(r.settings.temperature == 0 and r.settings.prompt_cache is False
               for r in seen["coder"])


async def test_a_module_no_test_calls_is_run_and_agreement_replaces_a_crash(
        tmp_path: Path) -> None:
    run, tasks, seen = await run_pipeline(tmp_path, {
        "architect": [says(json.dumps(PLAN))],
        "tester": [says(fenced("test_intervals.py", NO_CALL))],
        "coder": [says(fenced("intervals.py", c)) for c in (CRASHES, RIGHT, RIGHT_TOO)],
        "reviewer": []}, spec=SPEC, review="failures")
    assert run.status == "completed", run.error
    # "1 of 1 tests pass" (an import) was no pass: every answer was run on the spec's
    # literals; the first raised from its own code, the two others agreed
    assert len(seen["coder"]) == 3
    told = seen["coder"][1].messages[-1].content
    assert "raised an error when run: merge([(1, 3), (2, 4)]) raised AttributeError" in told
    assert (tmp_path / "ws/intervals.py").read_text() == RIGHT
    (coder,) = [t for t in tasks if t.role == "coder"]
    assert not coder.result["accepted"] and coder.result["agreed"]  # not by a test


async def test_a_stub_never_stays_where_a_real_answer_exists(tmp_path: Path) -> None:
    tests = ("from intervals import merge\n\n\ndef test_merge():\n"
             "    assert merge([(1, 3), (3, 5)]) == [(1, 6)]\n")  # a tester's wrong value
    run, tasks, seen = await run_pipeline(tmp_path, {
        "architect": [says(json.dumps(PLAN))],
        "tester": [says(fenced("test_intervals.py", tests))],
        "coder": [says(fenced("intervals.py", c)) for c in (STUB, RIGHT, STUB2, STUB3)],
        "reviewer": []}, spec=SPEC, review="failures", max_rounds=1)
    assert run.status == "completed", run.error
    assert len(seen["coder"]) == 4
    assert "left merge unwritten (a stub)" in seen["coder"][1].messages[-1].content
    # the next sample is told what the last did, afresh: the answer not in view
    assert "passed 0 of its 1 tests" in seen["coder"][2].messages[-1].content
    assert [m.role for m in seen["coder"][2].messages] == ["system", "user"]
    (coder,) = [t for t in tasks if t.role == "coder"]
    assert "passed 0 of its 1 tests" in checks(tmp_path, coder.id)[1]["data"]["why"]
    # every answer fails the tester's test: the first (a stub) is not the first of equals
    assert (tmp_path / "ws/intervals.py").read_text() == RIGHT


async def test_an_answer_that_defines_what_its_dependents_import_ranks_above_one_that_does_not(
        tmp_path: Path) -> None:
    """The plan says the module exports merge and covered (what a module built on it
    imports); its tests and its calls cannot tell the answers apart, the names they
    define do (the first defines no covered: its dependents would not import)."""
    both = {"modules": [{**PLAN["modules"][0], "public_api": ["merge(items)",
                                                              "covered(items)"]}]}
    tests = ("from intervals import merge\n\n\ndef test_merge():\n"
             "    assert merge([(1, 3), (3, 5)]) == [(1, 6)]\n")  # a tester's wrong value
    whole = RIGHT + "\n\ndef covered(items):\n    return sum(e - s for s, e in merge(items))\n"
    run, tasks, seen = await run_pipeline(tmp_path, {
        "architect": [says(json.dumps(both))],
        "tester": [says(fenced("test_intervals.py", tests))],
        "coder": [says(fenced("intervals.py", c))
                  for c in (RIGHT, whole, RIGHT_TOO, RIGHT.replace("[]", "list()"))],
        "reviewer": []}, spec=SPEC + "`covered(items)` is the length they cover.\n",
        review="failures", max_rounds=1)
    assert run.status == "completed", run.error
    assert len(seen["coder"]) == 4
    assert (tmp_path / "ws/intervals.py").read_text() == whole
    (coder,) = [t for t in tasks if t.role == "coder"]
    assert [h["score"] for h in coder.result["history"]] == [[0, 1, 0, 0]] * 4


def _route(**answer: Any) -> Writes:
    """What the coder's route writes for ``answer`` in the default review mode."""
    task = SimpleNamespace(input={"module": PLAN["modules"][0], "round": 1, "spec": SPEC,
                                  "stated": {"section": SPEC}})
    writes = Writes()
    _code_route("failures", WorkClock())(  # type: ignore[arg-type]
        CodeAnswer(files={"intervals.py": RIGHT}, **answer), task, writes)
    return writes


NONE_RAN = {"passed": None, "tests_passed": 0, "tests_failed": 0, "tests_errors": 0}
PROBES_FAIL = {"passed": False, "tests_passed": 2, "tests_failed": 1, "tests_errors": 0}


@pytest.mark.parametrize(("answer", "kind", "says_"), [
    # two answers alike where no test calls it: approved, and by what
    ({"agreed": True, "report": NONE_RAN, "vouched": [0, 0]}, "module.approved",
     "by agreement: no test calls it, and two of its answers gave the same results"),
    ({"agreed": True, "out_of_time": True, "report": NONE_RAN, "vouched": [0, 0]},
     "module.approved", "by agreement"),
    # only the tester's own tests fail: kept unreviewed, not failed; zero is no "passes"
    ({"report": PROBES_FAIL, "vouched": [2, 2]}, "module.kept",
     "the tester's own tests fail (2 tests passed, 1 failed), and they may be wrong; "
     "every one of the 2 tests the spec vouches for passes"),
    ({"report": PROBES_FAIL, "vouched": [0, 0]}, "module.kept",
     "the spec vouches for none of them"),
    ({"out_of_time": True, "report": PROBES_FAIL, "vouched": [2, 2]}, "module.kept",
     "the tester's own tests fail"),
    # nothing ran and no two answers agreed: kept, said untested
    ({"report": NONE_RAN, "vouched": [0, 0]}, "module.kept",
     "no test calls it, and no two of its answers agreed when run"),
    # no test of it could run at all (it does not import): failed
    ({"report": {**NONE_RAN, "passed": False, "output": "ImportError: x"}, "vouched": [0, 0]},
     "module.failed", "no test of its best code could run: ImportError: x"),
    ({"out_of_time": True, "report": PROBES_FAIL, "vouched": [1, 2]}, "module.failed",
     "the run's time budget is spent; its best code is kept (2 tests passed, 1 failed)"),
    ({"out_of_time": True, "report": NONE_RAN, "vouched": []}, "module.failed",
     "the run's time budget is spent; its best code is kept (no test of it ran)"),
])
def test_each_outcome_says_what_the_module_rested_on(answer: dict[str, Any], kind: str,
                                                      says_: str) -> None:
    writes = _route(**answer)
    assert [e[0] for e in writes.events] == [kind] and not writes.handoffs
    (note,) = writes.notes
    assert says_ in note.body
    assert "there are none" not in note.body
    assert (" failed after " in note.body) == (kind == "module.failed")


def test_a_trusted_test_failing_still_goes_to_review() -> None:
    writes = _route(report=PROBES_FAIL, vouched=[1, 2])
    assert [h.to_role for h in writes.handoffs] == ["reviewer"] and not writes.events


async def test_an_answer_tried_before_is_not_tested_again_and_a_new_sample_is_asked(
        tmp_path: Path) -> None:
    tests = ("from intervals import merge\n\n\ndef test_merge():\n"
             "    assert merge([(1, 3), (2, 4)]) == [(1, 4)]\n")
    run, tasks, seen = await run_pipeline(tmp_path, {
        "architect": [says(json.dumps(PLAN))],
        "tester": [says(fenced("test_intervals.py", tests))],
        "coder": [says(fenced("intervals.py", c)) for c in (CRASHES, CRASHES, RIGHT)],
        "reviewer": []}, spec=SPEC, review="failures", max_rounds=1)
    assert run.status == "completed", run.error
    assert "same as an earlier version" in seen["coder"][2].messages[-1].content
    assert [m.role for m in seen["coder"][2].messages] == ["system", "user"]  # afresh
    (coder,) = [t for t in tasks if t.role == "coder"]
    assert "same as an earlier version" in checks(tmp_path, coder.id)[1]["data"]["why"]
    assert coder.result["accepted"]
    assert [h["score"][:2] for h in coder.result["history"]] == [[0, 1]]  # tried once


def test_a_later_rounds_new_sample_is_asked_as_the_first_round_asks(tmp_path: Path) -> None:
    """A review round's request shows the module it revises; a new sample is asked without
    it (a 1.5B shown its module sent it back byte for byte, three samples at 0.7)."""
    from agents.coder import Coder
    from agents.coderasks import module_request
    from agents.workspace import Workspace

    coder = Coder(Workspace(tmp_path))
    task = {"module": PLAN["modules"][0], "spec": SPEC, "stated": {"section": SPEC},
            "round": 2, "current": CRASHES, "comments": ["sort by start"]}
    assert CRASHES.rstrip() in coder.task_message(task)
    sample = coder.sample_message(task)
    assert sample.startswith(module_request(SPEC, "intervals.py", {}))
    assert CRASHES.rstrip() not in sample and "sort by start" not in sample
    assert coder.render_sample({**task, "round": 1, "current": ""}) is None


async def test_a_name_a_module_built_before_defines_is_imported_where_it_is_used(
        tmp_path: Path) -> None:
    """A plan with no ``uses`` (a fallback plan lists none): an answer calling a function
    of a module built before it, unimported, gets the import, not a NameError on every
    call (seen: a 0.5B's evaluator called ``tokenize``)."""
    spec = ("# pair\n\nWrite `base.py` (tested in `test_base.py`): `one()` returns 1. "
            "Then `top.py` (tested in `test_top.py`): `two()` returns `one() + 1`.\n")
    plan = {"modules": [
        {"path": "base.py", "purpose": "one", "test_path": "test_base.py",
         "public_api": ["one()"]},
        {"path": "top.py", "purpose": "two", "test_path": "test_top.py",
         "public_api": ["two()"]}]}
    _, _, _ = await run_pipeline(tmp_path, {
        "architect": [says(json.dumps(plan))],
        "tester": [says(fenced("test_base.py", "from base import one\n\n\ndef test_one():"
                               "\n    assert one() == 1\n")),
                   says(fenced("test_top.py", "from top import two\n\n\ndef test_two():"
                               "\n    assert two() == 2\n"))],
        "coder": [says("```python\ndef one():\n    return 1\n```\n"),
                  says("```python\ndef two():\n    return one() + 1\n```\n")],
        "reviewer": []}, spec=spec, review="failures")
    top = (tmp_path / "ws" / "top.py").read_text()
    assert top.startswith("from base import one\n"), top
