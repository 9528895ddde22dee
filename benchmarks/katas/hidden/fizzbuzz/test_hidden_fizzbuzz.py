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


def test_three_is_fizz_and_five_is_buzz() -> None:
    assert fizzbuzz(3) == ["1", "2", "Fizz"]
    assert fizzbuzz(5)[-1] == "Buzz"


def test_hundred_counts() -> None:
    out = fizzbuzz(100)
    assert (out.count("FizzBuzz"), out.count("Fizz"), out.count("Buzz")) == (6, 27, 14)


def test_plain_numbers_are_themselves() -> None:
    out = fizzbuzz(98)
    assert out[96] == "97" and out[97] == "98" and out[0] == "1"


def test_large_negative_raises() -> None:
    with pytest.raises(ValueError):
        fizzbuzz(-100)
