"""Hidden acceptance tests for specs/calc.md, the tokenizer (never shown to the pipeline)."""

import pytest
from calc.tokenizer import tokenize


def test_example() -> None:
    assert tokenize("12+3*(4-1)") == ["12", "+", "3", "*", "(", "4", "-", "1", ")"]


def test_spaces_skipped() -> None:
    assert tokenize(" 7 /  2 ") == ["7", "/", "2"]


def test_tabs_skipped() -> None:
    assert tokenize("1\t+\t22") == ["1", "+", "22"]


def test_empty() -> None:
    assert tokenize("") == []


def test_every_operator() -> None:
    assert tokenize("()+-*/") == ["(", ")", "+", "-", "*", "/"]


def test_numbers_stay_strings() -> None:
    assert tokenize("007 100") == ["007", "100"]


@pytest.mark.parametrize("text", ["2 % 3", "1.5"])
def test_other_characters_raise(text: str) -> None:
    with pytest.raises(ValueError):
        tokenize(text)
