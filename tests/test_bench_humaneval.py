"""HumanEval's development set in the quality benchmark, on a synthetic problem file (no
network, no real data): ids past 81 are refused and their lines never parsed, a problem
becomes a spec and a hidden test per assert of its ``check``, and the benchmark runs it
end to end against a fake server."""

from __future__ import annotations

import gzip
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks import humaneval
from benchmarks.katas import hidden_total, load_kata, score_hidden
from benchmarks.pipeline_quality import main, read_rows, summary

sys.path.insert(0, str(Path(__file__).parent / "models"))
from model_wire import Reply, WireServer

ADD = humaneval.Problem(
    0, 'def add(a: int, b: int) -> int:\n    """The sum.\n    >>> add(1, 2)\n    3\n    """\n',
    "add", "METADATA = {'author': 'x'}\n\n\ndef check(candidate):\n"
           "    assert candidate(1, 2) == 3\n    assert True, 'debugging'\n    x = 5\n"
           "    assert candidate(x, 1) == 6\n    for i in range(3):\n"
           "        assert candidate(i, 0) == i\n")
QUAD = humaneval.Problem(
    1, 'def double(x):\n    return 2 * x\n\n\ndef quad(x):\n    """Four times x.\n'
       '    >>> quad(1)\n    4\n    """\n', "quad",
    "def check(candidate):\n    assert candidate(2) == double(4)\n    assert candidate(0) == 0\n")


def _line(p: humaneval.Problem) -> str:
    return json.dumps({"task_id": f"HumanEval/{p.number}", "prompt": p.prompt,
                       "canonical_solution": "", "test": p.test, "entry_point": p.entry_point})


@pytest.fixture
def data(tmp_path: Path) -> Path:
    """Two development problems, and a check problem whose line is not even JSON: any
    attempt to parse it fails the test."""
    path = tmp_path / "HumanEval.jsonl.gz"
    with gzip.open(path, "wt") as f:
        f.write(f"{_line(ADD)}\n{_line(QUAD)}\n"
                '{"task_id": "HumanEval/90", "prompt": <not for reading>\n')
    return path


def test_ids_past_the_development_set_are_refused_with_what_to_do() -> None:
    assert humaneval.parse_ids("0-2, 5,1") == [0, 1, 2, 5]
    assert humaneval.parse_ids("0-81") == list(range(82))
    for text, bad in (("80-82", "82"), ("90", "90"), ("0-19,163", "163")):
        with pytest.raises(humaneval.HumanEvalError, match=f"HumanEval/{bad} is not a "
                           "development problem: only ids 0-81"):
            humaneval.parse_ids(text)
    with pytest.raises(humaneval.HumanEvalError, match="0-81 or 0-19,40"):
        humaneval.parse_ids("first ten")


def test_the_loader_reads_development_lines_only(data: Path) -> None:
    assert humaneval.load_dev_problems(data, [1, 0]) == [ADD, QUAD]
    with pytest.raises(humaneval.HumanEvalError, match="HumanEval/90 is not"):
        humaneval.load_dev_problems(data, [0, 90])
    with pytest.raises(humaneval.HumanEvalError, match="no HumanEval/5 in it"):
        humaneval.load_dev_problems(data, [5])


def test_check_is_cut_into_one_test_per_assert_each_with_the_setup_before_it() -> None:
    prelude, units = humaneval.check_units(ADD.test)
    assert prelude == "METADATA = {'author': 'x'}"
    assert len(units) == 3  # assert True checks nothing and is dropped
    assert "x = 5" not in units[0] and "x = 5" in units[1] and "for i in range(3)" in units[2]
    assert all(u.startswith("def check(candidate):\n") for u in units)


def test_a_problem_becomes_a_kata_scored_per_assert(data: Path, tmp_path: Path) -> None:
    root = humaneval.write_set(humaneval.load_dev_problems(data, [0, 1]), tmp_path / "set",
                               seconds=1)
    assert root.name == "humaneval"
    assert (root / "hidden" / "COUNTS").read_text() == "heval_000 3\nheval_001 2\n"
    add, quad = load_kata("heval_000", root), load_kata("heval_001", root)
    assert add.modules == ("heval_000.py",) and add.tests == ("test_heval_000.py",)
    assert ADD.prompt.strip() in add.text and "check" not in add.text
    assert (hidden_total(add), hidden_total(quad)) == (3, 2)
    cases = {"def add(a, b):\n    return a + b\n": 3,
             "def add(a, b):\n    while a == 5:\n        pass\n    return a + b\n": 2}
    for code, passed in cases.items():
        ws = tmp_path / f"ws{passed}{len(code)}"
        ws.mkdir()
        (ws / "heval_000.py").write_text(code)
        assert score_hidden(add, ws) == (passed, 3), code  # a loop fails its unit only
    ws = tmp_path / "quad"
    ws.mkdir()
    (ws / "heval_001.py").write_text("def quad(x):\n    return 4 * x\n")  # no double: the
    assert score_hidden(quad, ws) == (2, 2)                             # prompt's is used


@pytest.fixture
def server() -> Iterator[WireServer]:
    wire = WireServer()
    yield wire
    wire.close()


def test_the_benchmark_runs_development_problems_and_refuses_the_check(
        server: WireServer, data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def reply(code: str) -> Reply:
        return Reply(body={"choices": [{"finish_reason": "stop", "message": {
            "content": f"```python\n{code}```"}}], "usage": {"prompt_tokens": 1,
                                                             "completion_tokens": 1}})
    server.add(reply("def add(a, b):\n    return a + b if a < 2 else 0\n"))
    out = tmp_path / "he.jsonl"
    model = f"openai-compatible:{server.url}/v1#fake"
    assert main(["--humaneval", "0", "--humaneval-data", str(data), "--sides", "one-shot",
                 "--model", model, "--out", str(out)]) == 0
    rows = read_rows(out)
    assert [(r["set"], r["spec"], r["hidden"]) for r in rows] == [
        ("humaneval", "heval_000", [1, 3])]
    asked = server.last["messages"][1]["content"]
    assert "Write `heval_000.py`." in asked and "candidate" not in asked
    shown = summary(rows)
    assert "| fake | humaneval | heval_000 | n/a | 1/3 |" in shown
    assert "| fake | humaneval | **solved** | n/a | 0/1 (0%) |" in shown
    assert "1.5B 70.7 %, 0.5B 61.6 %" in shown
    with pytest.raises(SystemExit):
        main(["--humaneval", "70-90", "--humaneval-data", str(data), "--model", model,
              "--out", str(out)])
    assert "HumanEval/90 is not a development problem" in capsys.readouterr().err
    assert server.count == 1
