"""The coder's floor, through the whole pipeline: its first request is the one a user
makes of the model, a module no test calls is still run, a stub never stays where a
real answer exists, and the candidates' agreement decides where no test does."""

from __future__ import annotations

import json
from pathlib import Path

from test_team import fenced, run_pipeline, says

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


async def test_the_first_request_asks_as_a_user_would(tmp_path: Path) -> None:
    _, _, seen = await run_pipeline(tmp_path, {
        "architect": [says(json.dumps(PLAN))], "tester": [says(fenced("test_intervals.py",
                                                                      NO_CALL))],
        "coder": [says(fenced("intervals.py", RIGHT)), says(fenced("intervals.py", RIGHT))],
        "reviewer": []}, spec=SPEC, review="failures")
    first = seen["coder"][0].messages[1].content
    assert first.startswith(f"# The spec\n\n{SPEC.strip()}\n\n# Your task\n\n"
                            "Write the module intervals.py.\nReply with the complete module "
                            "in one fenced block.")
    assert "test_intervals.py" not in first.split("# Your task")[1]  # no tests in view


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
    assert not coder.result["accepted"]  # by agreement, not by a test


async def test_a_stub_never_stays_where_a_real_answer_exists(tmp_path: Path) -> None:
    tests = ("from intervals import merge\n\n\ndef test_merge():\n"
             "    assert merge([(1, 3), (3, 5)]) == [(1, 6)]\n")  # a tester's wrong value
    run, _, seen = await run_pipeline(tmp_path, {
        "architect": [says(json.dumps(PLAN))],
        "tester": [says(fenced("test_intervals.py", tests))],
        "coder": [says(fenced("intervals.py", c)) for c in (STUB, RIGHT, STUB, STUB)],
        "reviewer": []}, spec=SPEC, review="failures", max_rounds=1)
    assert run.status == "completed", run.error
    assert len(seen["coder"]) == 4
    assert "left merge unwritten (a stub)" in seen["coder"][1].messages[-1].content
    # every answer fails the tester's test: the first (a stub) is not the first of equals
    assert (tmp_path / "ws/intervals.py").read_text() == RIGHT
