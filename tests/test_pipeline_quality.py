"""The quality benchmark's harness end to end against a fake OpenAI-compatible server
(``python -m benchmarks.pipeline_quality``): the one-shot baseline's one request per
module (greedy, a cap no answer reaches, the modules already written shown), its code
written as the module and scored by the hidden tests; the module+tests request as a
second side; the best of N sampled answers; the ``orchestra run`` side's figures read
from its store; a run that does not end is killed at the limit and says so."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchmarks.katas import hidden_total, kata_names, load_kata
from benchmarks.one_shot import module_files
from benchmarks.pipeline_quality import MAX_TOKENS, main, read_rows, summary, table

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


def test_the_one_shot_asks_once_for_the_module_alone_and_it_passes_the_hidden_tests(
        server: WireServer, tmp_path: Path) -> None:
    server.add(completion(f"Here it is.\n\n```python\n{FIZZBUZZ}```\n\nUse it well."))
    [row] = run(server, tmp_path, "--sides", "one-shot", "--specs", "fizzbuzz")
    assert server.count == 1
    sent = server.last
    assert (sent["temperature"], sent["max_tokens"], sent["model"]) == (0, MAX_TOKENS, "fake")
    assert sent["cache_prompt"] is False  # greedy, computed cold: one answer per prompt
    assert [m["role"] for m in sent["messages"]] == ["system", "user"]
    asked = sent["messages"][1]["content"]
    assert asked.startswith(load_kata("fizzbuzz").text.strip())
    assert asked.endswith("Write `kata/fizzbuzz.py`. Reply with the complete module in one "
                          "fenced ```python block.")
    assert "tests" not in asked.split("\n\n")[-1]
    assert row["side"] == "one-shot" and row["finish_reasons"] == ["stop"]
    assert row["max_tokens"] == [MAX_TOKENS]  # the fake server states no context
    assert row["hidden"] == [hidden_total(load_kata("fizzbuzz"))] * 2
    assert (row["tokens_in"], row["tokens_out"], row["model_calls"]) == (10, 5, 1)
    assert (row["prompt_evaluated"], row["prompt_reused"], row["cut_off"]) == (7, 3, 0)
    assert row["ended_by_itself"] and row["wrote_every_module"]
    assert row["commit"] and row["started"].endswith(" UTC") and row["load_average"] >= 0
    shown = table(read_rows(tmp_path / "quality.jsonl"))
    assert "| fake | fizzbuzz | one-shot | 1 | 10/10 (100%) |" in shown
    assert "| 7 / 3 | 1/1 | 1/1 |" in shown


def test_the_cap_is_bounded_by_the_context_the_model_spec_states(
        server: WireServer, tmp_path: Path) -> None:
    server.add(completion(f"```python\n{FIZZBUZZ}```"))
    out = tmp_path / "q.jsonl"
    assert main(["--model", f"openai-compatible:{server.url}/v1#fake?context=2048", "--out",
                 str(out), "--sides", "one-shot", "--specs", "fizzbuzz"]) == 0
    [row] = read_rows(out)
    asked = server.last["messages"][1]["content"]
    assert row["max_tokens"] == [server.last["max_tokens"]]
    assert 2048 - len(asked) // 2 < server.last["max_tokens"] < 2048 - len(asked) // 4


def test_a_spec_of_several_modules_is_asked_module_by_module_in_its_order(
        server: WireServer, tmp_path: Path) -> None:
    server.add(completion("```python\n# calc/evaluator.py\nWRONG = 1\n```\n"
                          "```python\nTOKENS = 1\n```\n"),
               Reply(body={"choices": [{"finish_reason": "length", "message": {
                   "content": "calc/evaluator.py\n```python\nfrom calc.tokenizer import "
                              "TOKENS\nVALUE = TOKENS"}}]}))
    [row] = run(server, tmp_path, "--sides", "one-shot", "--specs", "calc", "--keep")
    first, second = (r.body["messages"][1]["content"] for r in server.received)
    assert "Write `calc/tokenizer.py`." in first and "already written" not in first
    assert second.index("The modules already written:") < second.index(
        "`calc/tokenizer.py`:\n\n```python\nTOKENS = 1\n```") < second.index(
        "Write `calc/evaluator.py`.")
    ws = Path(row["dir"]) / "ws"
    assert (ws / "calc/tokenizer.py").read_text() == "TOKENS = 1\n"
    assert (ws / "calc/evaluator.py").read_text().endswith("VALUE = TOKENS")  # cut off, kept
    assert row["model_calls"] == 2 and row["finish_reasons"] == ["stop", "length"]
    assert row["cut_off"] == 1 and row["wrote_every_module"]


def test_the_module_and_tests_request_is_a_side_of_its_own(server: WireServer,
                                                            tmp_path: Path) -> None:
    server.add(completion(f"Here it is.\n\n```python\n{FIZZBUZZ}```\n\nAnd its tests:\n\n"
                          "```python\nfrom kata.fizzbuzz import fizzbuzz\n```\n"))
    [row] = run(server, tmp_path, "--sides", "module+tests", "--specs", "fizzbuzz",
                "--max-tokens", "3000")
    assert server.count == 1 and server.last["max_tokens"] == 3000
    assert server.last["messages"][1]["content"].endswith(
        "Reply with the module in one ```python block, then its tests.")
    assert row["side"] == "module+tests" and row["hidden"] == [10, 10]


def test_the_best_of_n_samples_module_alone_answers_and_the_summary_shows_every_side(
        server: WireServer, tmp_path: Path) -> None:
    server.add(completion("no code"), completion(f"```python\n{FIZZBUZZ}```"),
               completion("```python\ndef fizzbuzz(n):\n    return []\n```"),
               completion("```python\ndef fizzbuzz(n):\n    return None\n```"))
    rows = run(server, tmp_path, "--sides", "one-shot", "module+tests", "--specs", "fizzbuzz",
               "--best-of", "3")
    temperatures = [r.body["temperature"] for r in server.received]
    assert temperatures == [0, 0.7, 0.7, 0]  # the one-shot and its samples, then module+tests
    assert [r.body.get("cache_prompt") for r in server.received] == [False, None, None, False]
    one, both = rows
    assert one["hidden"] == [0, 10] and one["samples"][0] == [0, 10]
    assert one["samples"][1] == [10, 10] and both["hidden"][0] < 10
    shown = summary(rows)
    assert f"| fake | katas | fizzbuzz | n/a | 0/10 | {both['hidden'][0]}/10 | 10/10 |" in shown
    assert "| fake | katas | **solved** | n/a | 0/1 (0%) | 0/1 (0%) | 1/1 (100%) |" in shown


def test_a_results_file_of_before_the_module_alone_baseline_still_reads(
        tmp_path: Path) -> None:
    legacy = {"spec": "roman", "set": "katas", "side": "baseline", "model": "m#old",
              "hidden": [3, 10], "samples": [[3, 10], [6, 10]], "wall_s": 5,
              "model_calls": 1, "ended_by_itself": True}
    shown = summary([legacy])
    assert "| old | katas | roman | n/a | n/a | 3/10 | 6/10 |" in shown


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


@pytest.mark.slow
def test_the_limit_is_per_module_the_spec_names(server: WireServer, tmp_path: Path) -> None:
    """The pipeline's default budget is per module: a two-module spec is not killed at one
    module's limit."""
    modules = len(load_kata("calc").modules)
    assert modules == 2
    server.add(*[Reply(body={}, delay=30)] * 5)
    [row] = run(server, tmp_path, "--sides", "orchestra", "--specs", "calc", "--limit", "2")
    assert row["exit"] == "killed" and row["limit_s"] == 2 * modules
    assert 2 * modules <= row["wall_s"] < 30
