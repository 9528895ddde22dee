"""Hidden acceptance tests for specs/rle.md (never shown to the pipeline)."""

import pytest
from kata.rle import decode, encode


def test_encode_example() -> None:
    assert encode("aaabcc") == "3a1b2c"


def test_encode_single_runs() -> None:
    assert encode("abc") == "1a1b1c"


def test_decode_example() -> None:
    assert decode("3a1b2c") == "aaabcc"


def test_decode_multi_digit() -> None:
    assert decode("12x") == "x" * 12


def test_empty() -> None:
    assert encode("") == "" and decode("") == ""


def test_round_trip() -> None:
    text = "WWWWWWWWWWWWBWWWWWWWWWWWWBBB  !"
    assert decode(encode(text)) == text
    assert encode(text) == "12W1B12W3B2 1!"


def test_digit_raises() -> None:
    with pytest.raises(ValueError):
        encode("a1")


def test_encode_one_character() -> None:
    assert encode("a") == "1a"


def test_encode_long_run() -> None:
    assert encode("a" * 12 + "b") == "12a1b"


def test_decode_single_runs() -> None:
    assert decode("1a1b1c") == "abc"


def test_decode_mixed_counts() -> None:
    assert decode("10a2b") == "a" * 10 + "bb"
