"""A coder's reply that is not a clean file: cut off inside its file (what is complete is
kept as a candidate), or no Python at all (sent back with its error)."""

from __future__ import annotations

from pathlib import Path

from test_harvest import SPEC, plan
from test_team import GOOD, TESTS, approve, fenced, run_pipeline, says

from agents.codereply import complete_part
from orchestra.models.base import ModelRequest, ModelResponse

CLASS = ("```python\nclass Box:\n    def __init__(self, w):\n        self.w = w\n\n"
         "    def area(self):\n        return self.w * self.w\n\n    def grow(self, by):\n"
         "        return Box(self.w +")


def test_a_reply_cut_off_keeps_the_definitions_before_the_cut() -> None:
    kept = complete_part("Here it is:\n" + CLASS)
    assert kept is not None and kept.startswith("Here it is:\n```python\nclass Box:")
    assert "def area" in kept and "def grow" not in kept and kept.rstrip().endswith("```")
    two = "```python\nimport math\n\n\ndef a():\n    return 1\n\n\n@cache\ndef b():\n    return ("
    kept = complete_part(two)
    assert kept is not None and "def a" in kept and "@cache" not in kept and "def b" not in kept
    assert complete_part("```python\ndef a():\n    return (") is None  # nothing complete
    assert complete_part("```python\ndef a():\n    return 1\n```\n") is None  # not cut off


async def test_the_coder_tests_what_a_cut_off_reply_completed(tmp_path: Path) -> None:
    cut = ModelResponse(text=fenced("calc/add.py", GOOD + "\n\ndef extra(x):\n    return (")
                        .rsplit("```", 1)[0], finish_reason="length")
    run, _tasks, seen = await run_pipeline(tmp_path, {
        "architect": [plan], "tester": [says(fenced("tests/test_add.py", TESTS))],
        "coder": [lambda _: cut], "reviewer": [approve]}, spec=SPEC)
    assert run.status == "completed", run.error
    assert len(seen["coder"]) == 1  # no second try for the same tokens
    assert (tmp_path / "ws/calc/add.py").read_text().strip() == GOOD.strip()


async def test_a_copy_of_the_spec_is_sent_back_as_not_python(tmp_path: Path) -> None:
    def copy(request: ModelRequest) -> ModelResponse:
        return ModelResponse(text="```python\n" + SPEC + "\n```\n")

    run, _tasks, seen = await run_pipeline(tmp_path, {
        "architect": [plan], "tester": [says(fenced("tests/test_add.py", TESTS))],
        "coder": [copy, says(fenced("calc/add.py", GOOD))], "reviewer": [approve]}, spec=SPEC)
    assert run.status == "completed", run.error
    assert "Your module is not usable yet: not valid Python" in seen["coder"][1].messages[
        -1].content


async def test_a_fix_that_is_still_unusable_is_followed_by_a_new_sample(
        tmp_path: Path) -> None:
    """One fix is asked in view of an unusable answer; when the fix is unusable too (a
    1.5B sent the same broken text back), the next request is a new sample, not another
    fix of it."""
    broken = says("```python\ndimension(unit: str) -> str:\n    return unit\n```\n")
    run, _tasks, seen = await run_pipeline(tmp_path, {
        "architect": [plan], "tester": [says(fenced("tests/test_add.py", TESTS))],
        "coder": [broken, broken, broken, broken, says(fenced("calc/add.py", GOOD))],
        "reviewer": [approve]}, spec=SPEC)
    assert run.status == "completed", run.error
    asked = [r.messages for r in seen["coder"]]
    assert "not usable yet" in asked[1][-1].content and len(asked[1]) > 2  # a fix, in view
    assert "last one was not usable" in asked[2][-1].content
    assert [m.role for m in asked[2]] == ["system", "user"]  # afresh: the answer not in view
    assert "not usable yet" in asked[3][-1].content  # the new sample's own fix, in view
    assert "last one was not usable" in asked[4][-1].content
    assert (tmp_path / "ws/calc/add.py").read_text().strip() == GOOD.strip()


async def test_past_the_budget_a_module_with_no_usable_answer_gives_up(tmp_path: Path) -> None:
    """The run ends on time: after the coder's last tries, the module is left unwritten
    and the run's notes say why (it was tried until its output retries ran out)."""
    from agents.coder import Coder

    garbage = says("```python\nthis is not python at all, sorry\n```\n")
    run, tasks, seen = await run_pipeline(tmp_path, {
        "architect": [plan], "tester": [says(fenced("tests/test_add.py", TESTS))],
        "coder": [garbage] * 8, "reviewer": []}, spec=SPEC, time_budget=1)
    assert run.status == "completed", run.error
    assert len(seen["coder"]) == 1 + Coder.last_tries
    assert not (tmp_path / "ws/calc/add.py").exists()
    (coder,) = [t for t in tasks if t.role == "coder"]
    assert coder.result["out_of_time"] is True and coder.result["files"] == {}
