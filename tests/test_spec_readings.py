"""benchmarks.spec_readings: what the readers give for every spec, and what a change alters."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.spec_readings import _differences, main, readings

SPEC = ("# shop\n\nWrite `shop.py` with `total(prices: list[int]) -> int`.\n\n"
        "```\n>>> total([1, 2])\n3\n```\n")


def _set(tmp_path: Path) -> Path:
    (tmp_path / "set" / "specs").mkdir(parents=True)
    (tmp_path / "set" / "specs" / "shop.md").write_text(SPEC)
    return tmp_path / "set"


def test_the_readings_of_a_spec_are_its_plan_sections_and_cases(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--set", str(_set(tmp_path)), "--no-humaneval"]) == 0
    got = json.loads(capsys.readouterr().out)["set/shop"]
    assert got["plan"]["modules"][0]["public_api"] == ["total(prices: list[int]) -> int"]
    assert got["shop.py"]["cases"] == [
        "SpecCase(call='total([1, 2])', expected='3', error=None, setup=())"]


def test_a_change_of_a_reading_is_named_with_its_spec() -> None:
    old = readings({"a": SPEC, "b": SPEC})
    new = readings({"a": SPEC, "b": SPEC.replace("3\n", "4\n")})
    lines = _differences(old, new)
    assert [line for line in lines if line.startswith("== ")] == ["== b"]
    assert any("expected='4'" in line for line in lines if line.startswith("+"))


def test_the_same_agents_read_alike(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--old HEAD`` reads with the committed agents/ in a child process."""
    assert main(["--old", "HEAD", "--set", str(_set(tmp_path)), "--no-humaneval"]) == 0
    out = capsys.readouterr().out
    assert "0 of 1 specs read otherwise" in out
