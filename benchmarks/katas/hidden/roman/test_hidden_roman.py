"""Hidden acceptance tests for specs/roman.md (never shown to the pipeline)."""

import pytest
from kata.roman import to_roman


@pytest.mark.parametrize(("n", "roman"), [(1, "I"), (3, "III"), (4, "IV"), (9, "IX"),
                                          (14, "XIV"), (40, "XL"), (90, "XC"), (400, "CD"),
                                          (900, "CM"), (1994, "MCMXCIV"), (2024, "MMXXIV"),
                                          (3999, "MMMCMXCIX")])
def test_numerals(n: int, roman: str) -> None:
    assert to_roman(n) == roman


@pytest.mark.parametrize("n", [0, -5, 4000])
def test_out_of_range_raises(n: int) -> None:
    with pytest.raises(ValueError):
        to_roman(n)
