"""Hidden acceptance tests for specs/calc.md, the evaluator (never shown to the pipeline)."""

import calc.evaluator
import calc.tokenizer
import pytest
from calc.evaluator import evaluate


@pytest.mark.parametrize(("text", "value"), [
    ("1 + 2 * 3", 7), ("(1 + 2) * 3", 9), ("10 - 4 - 3", 3), ("7 / 2", 3),
    ("2 * (3 + 4) - 5 / 5", 13)])
def test_values(text: str, value: int) -> None:
    assert evaluate(text) == value


@pytest.mark.parametrize("text", ["1 +", "(1 + 2", "1 2", "-1"])
def test_malformed_raises(text: str) -> None:
    with pytest.raises(ValueError):
        evaluate(text)


def test_refused_character_raises() -> None:
    with pytest.raises(ValueError):
        evaluate("2 % 3")


def test_division_by_zero() -> None:
    with pytest.raises(ZeroDivisionError):
        evaluate("1 / 0")


def test_built_on_the_tokenizer() -> None:
    assert calc.evaluator.tokenize is calc.tokenizer.tokenize
