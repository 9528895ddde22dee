import pytest
from tally.money import format_amount, parse_amount


def test_parse_amount_examples():
    assert parse_amount("12.50") == 1250
    assert parse_amount("3") == 300
    assert parse_amount("-0.05") == -5
    assert parse_amount("  7.05\n") == 705


@pytest.mark.parametrize("bad", ["1.5", "1,50", "+3", "", "abc", "1.505", "-", "1."])
def test_parse_amount_rejects(bad):
    with pytest.raises(ValueError):
        parse_amount(bad)


def test_format_amount_examples():
    assert format_amount(1250) == "12.50"
    assert format_amount(-5) == "-0.05"
    assert format_amount(123456789) == "1,234,567.89"
    assert format_amount(0) == "0.00"
    assert format_amount(-100000) == "-1,000.00"


def test_round_trip():
    for cents in (0, 1, 99, 100, 105, 99999, -250):
        assert parse_amount(format_amount(cents).replace(",", "")) == cents
