"""The quality benchmark's harness end to end against a fake OpenAI-compatible server
(``python -m benchmarks.pipeline_quality``): the baseline's one request, its code written
as the module and scored by the hidden tests; the ``orchestra run`` side's figures read
from its store; a run that does not end is killed at the limit and says so."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchmarks.katas import hidden_total, kata_names, load_kata
from benchmarks.one_shot import module_files
from benchmarks.pipeline_quality import main, read_rows, table

sys.path.insert(0, str(Path(__file__).parent / "models"))
from model_wire import Reply, WireServer

FIZZBUZZ = '''def fizzbuzz(n: int) -> list[str]:
    if n < 0:
        raise ValueError(n)
    return ["FizzBuzz" if i % 15 == 0 else "Fizz" if i % 3 == 0 else "Buzz" if i % 5 == 0
            else str(i) for i in range(1, n + 1)]
'''


def completion(text: str) -> Reply:
    """A chat completion as llama.cpp sends it: usage, and the prompt cache's timings."""
    return Reply(body={
        "id": "c", "object": "chat.completion", "created": 0, "model": "fake",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        "timings": {"prompt_n": 7, "cache_n": 3}})


@pytest.fixture
def server() -> Iterator[WireServer]:
    wire = WireServer()
    yield wire
    wire.close()


def run(server: WireServer, tmp_path: Path, *args: str) -> list[dict[str, Any]]:
    out = tmp_path / "quality.jsonl"
    assert main(["--model", f"openai-compatible:{server.url}/v1#fake", "--out", str(out),
                 *args]) == 0
    return read_rows(out)


def test_every_kata_has_8_to_20_hidden_tests_and_names_its_paths() -> None:
    names = kata_names()
    assert {"fizzbuzz", "roman", "rle", "calc"} <= set(names) and len(names) >= 6
    for name in names:
        kata = load_kata(name)
        assert 8 <= hidden_total(kata) <= 20, name
        assert kata.modules and len(kata.tests) == len(kata.modules), name
    assert load_kata("calc").modules == ("calc/tokenizer.py", "calc/evaluator.py")


def test_the_baseline_asks_once_and_its_module_passes_the_hidden_tests(
        server: WireServer, tmp_path: Path) -> None:
    server.add(completion(f"Here it is.\n\n```python\n{FIZZBUZZ}```\n\nAnd its tests:\n\n"
                          "```python\nfrom kata.fizzbuzz import fizzbuzz\n```\n"))
    [row] = run(server, tmp_path, "--sides", "baseline", "--specs", "fizzbuzz")
    assert server.count == 1
    sent = server.last
    assert sent["temperature"] == 0 and sent["model"] == "fake"
    assert [m["role"] for m in sent["messages"]] == ["system", "user"]
    assert load_kata("fizzbuzz").text.strip() in sent["messages"][1]["content"]
    assert row["hidden"] == [hidden_total(load_kata("fizzbuzz"))] * 2
    assert (row["tokens_in"], row["tokens_out"], row["model_calls"]) == (10, 5, 1)
    assert (row["prompt_evaluated"], row["prompt_reused"]) == (7, 3)
    assert row["ended_by_itself"] and row["wrote_every_module"]
    shown = table(read_rows(tmp_path / "quality.jsonl"))
    assert "| fake | fizzbuzz | baseline | 1 | 10/10 (100%) |" in shown
    assert "| 7 / 3 | 1/1 | 1/1 |" in shown


def test_a_reply_without_code_fails_every_hidden_test(server: WireServer,
                                                       tmp_path: Path) -> None:
    server.add(completion("I would write a function that loops from 1 to n."))
    [row] = run(server, tmp_path, "--sides", "baseline", "--specs", "roman")
    assert row["hidden"] == [0, hidden_total(load_kata("roman"))]
    assert row["files"] == [] and not row["wrote_every_module"]


def test_blocks_are_matched_to_modules_by_path_then_in_order() -> None:
    modules, tests = ("calc/tokenizer.py", "calc/evaluator.py"), ("tests/test_tokenizer.py",)
    labelled = ("`tests/test_tokenizer.py`:\n```python\nT = 1\n```\n"
                "**calc/evaluator.py**\n```python\nE = 1\n```\n"
                "```python\n# calc/tokenizer.py\nK = 1\n```\n")
    assert module_files(labelled, modules, tests) == {
        "calc/evaluator.py": "E = 1\n", "calc/tokenizer.py": "# calc/tokenizer.py\nK = 1\n"}
    unlabelled = "```python\nA = 1\n```\ntext\n```py\nB = 1\n```\n```python\nC = 1\n```\n"
    assert module_files(unlabelled, modules, tests) == {
        "calc/tokenizer.py": "A = 1\n", "calc/evaluator.py": "B = 1\n"}
    by_base_name = "tokenizer.py\n```python\nK = 1\n```\n"
    assert module_files(by_base_name, modules, tests) == {"calc/tokenizer.py": "K = 1\n"}


@pytest.mark.slow
def test_the_orchestra_side_reads_its_figures_from_the_store(server: WireServer,
                                                             tmp_path: Path) -> None:
    server.add(*[completion("I cannot help with that.")] * 60)
    [row] = run(server, tmp_path, "--sides", "orchestra", "--specs", "roman", "--limit", "120")
    assert row["ended_by_itself"] and row["exit"] != 0 and row["status"] == "failed"
    assert row["model_calls"] == server.count > 0
    assert (row["tokens_in"], row["tokens_out"]) == (10 * server.count, 5 * server.count)
    assert row["prompt_reused"] in (None, 3 * server.count)  # n/a until the journal has it
    assert row["hidden"] == [0, hidden_total(load_kata("roman"))]


@pytest.mark.slow
def test_a_run_past_the_limit_is_killed_and_says_so(server: WireServer,
                                                    tmp_path: Path) -> None:
    server.add(*[Reply(body={}, delay=30)] * 5)
    [row] = run(server, tmp_path, "--sides", "orchestra", "--specs", "rle", "--limit", "3")
    assert row["exit"] == "killed" and not row["ended_by_itself"]
    assert row["wall_s"] < 30
    assert "| rle | orchestra | 1 | 0/11 (0%) |" in table([row]) and "| 0/1 |" in table([row])
