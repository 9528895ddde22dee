"""Hidden acceptance tests for specs/fizzbuzz.md (never shown to the pipeline)."""

import pytest
from kata.fizzbuzz import fizzbuzz


def test_first_fifteen() -> None:
    assert fizzbuzz(15) == ["1", "2", "Fizz", "4", "Buzz", "Fizz", "7", "8", "Fizz", "Buzz",
                            "11", "Fizz", "13", "14", "FizzBuzz"]


def test_one() -> None:
    assert fizzbuzz(1) == ["1"]


def test_zero_is_empty() -> None:
    assert fizzbuzz(0) == []


def test_negative_raises() -> None:
    with pytest.raises(ValueError):
        fizzbuzz(-1)


def test_length_and_thirty() -> None:
    out = fizzbuzz(30)
    assert len(out) == 30 and out[29] == "FizzBuzz" and out[24] == "Buzz" and out[26] == "Fizz"


def test_returns_strings() -> None:
    assert all(isinstance(x, str) for x in fizzbuzz(20))
