"""Hidden acceptance tests for specs/wordfreq.md (never shown to the pipeline)."""

import pytest
from kata.wordfreq import top_words, word_counts


def test_counts_example() -> None:
    assert word_counts("The cat and the hat.") == {"the": 2, "cat": 1, "and": 1, "hat": 1}


def test_apostrophe_separates() -> None:
    assert word_counts("don't stop") == {"don": 1, "t": 1, "stop": 1}


@pytest.mark.parametrize("text", ["", "123 ...", "   \n\t"])
def test_no_words(text: str) -> None:
    assert word_counts(text) == {}


def test_digits_and_punctuation_separate() -> None:
    assert word_counts("a1b,a;B\nc") == {"a": 2, "b": 2, "c": 1}


def test_lower_case() -> None:
    assert word_counts("Go GO go gO") == {"go": 4}


def test_top_example() -> None:
    assert top_words("b a b c a b", 2) == [("b", 3), ("a", 2)]


def test_top_ties_alphabetical() -> None:
    assert top_words("the cat and the hat", 3) == [("the", 2), ("and", 1), ("cat", 1)]


def test_top_more_than_distinct() -> None:
    assert top_words("x y x", 10) == [("x", 2), ("y", 1)]


def test_top_zero() -> None:
    assert top_words("a b c", 0) == []


def test_top_negative_raises() -> None:
    with pytest.raises(ValueError):
        top_words("a b c", -1)


def test_top_counts_case_insensitively() -> None:
    assert top_words("Zed zed apple Apple APPLE", 2) == [("apple", 3), ("zed", 2)]
