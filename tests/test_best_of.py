"""The best of N drawn for one-shot rows already measured (``python -m
benchmarks.best_of``): each row's greedy answer kept as measured, N - 1 answers sampled at
the benchmark's temperature with their own seeds, J at a time, each scored by the hidden
tests; the rows written again in the set's order, and the summary's best-of column read
from them."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from benchmarks.best_of import main
from benchmarks.pipeline_quality import SAMPLE_TEMPERATURE, read_rows, summary

sys.path.insert(0, str(Path(__file__).parent / "models"))
from model_wire import Reply, WireServer
from test_pipeline_quality import FIZZBUZZ, completion

ROWS = [{"spec": name, "set": "katas", "side": side, "model": "m#fake", "hidden": hidden,
         "wall_s": 1, "model_calls": 1, "ended_by_itself": True}
        for name, side, hidden in [("fizzbuzz", "orchestra", [9, 10]),
                                   ("fizzbuzz", "one-shot", [0, 10]),
                                   ("rle", "one-shot", [1, 11])]]


def test_samples_are_drawn_at_once_and_each_row_keeps_its_greedy_answer(
        tmp_path: Path) -> None:
    wire = WireServer()

    def judge(body: Any) -> Reply:  # seed 2 answers fizzbuzz; every other answer has no code
        asked = body["messages"][1]["content"]
        good = body["seed"] == 2 and "fizzbuzz" in asked
        return replace(completion(f"```python\n{FIZZBUZZ}```" if good else "no code"), delay=0.3)

    wire.judge = judge
    rows, out = tmp_path / "rows.jsonl", tmp_path / "best.jsonl"
    rows.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    try:
        assert main(["--rows", str(rows), "--specs", "fizzbuzz", "rle", "--best-of", "3",
                     "--jobs", "4", "--out", str(out),
                     "--model", f"openai-compatible:{wire.url}/v1#fake"]) == 0
        sent = [r.body for r in wire.received]
        assert wire.max_in_flight == 4
    finally:
        wire.close()
    assert sorted(b["seed"] for b in sent) == [1, 1, 2, 2]
    assert {b["temperature"] for b in sent} == {SAMPLE_TEMPERATURE}
    fizz, rle = read_rows(out)
    assert (fizz["spec"], fizz["samples"]) == ("fizzbuzz", [[0, 10], [0, 10], [10, 10]])
    assert rle["samples"] == [[1, 11], [0, 11], [0, 11]]
    assert fizz["hidden"] == [0, 10] and fizz["samples_drawn"]["jobs"] == 4
    shown = summary([ROWS[0], fizz, rle])
    assert "| fake | katas | fizzbuzz | 9/10 | 0/10 | n/a | 10/10 |" in shown


def test_a_kata_with_no_greedy_row_is_refused_before_any_request(tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps(ROWS[0]) + "\n")
    with pytest.raises(SystemExit, match="no one-shot row for fizzbuzz"):
        main(["--rows", str(rows), "--specs", "fizzbuzz", "--out", str(tmp_path / "o"),
              "--model", "openai-compatible:http://127.0.0.1:9/v1#fake"])
