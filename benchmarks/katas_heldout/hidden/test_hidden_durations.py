import pytest
from durations import format_duration, parse_duration


def test_parse_examples():
    assert parse_duration("45s") == 45
    assert parse_duration("1h30m") == 5400
    assert parse_duration("2d") == 172800
    assert parse_duration("1d2h3m4s") == 93784


def test_parse_numbers_not_capped():
    assert parse_duration("90m") == 5400
    assert parse_duration("0s") == 0
    assert parse_duration("100s") == 100
    assert parse_duration("25h") == 90000


def test_parse_returns_int():
    assert type(parse_duration("1h")) is int


def test_parse_units_may_be_left_out():
    assert parse_duration("1d30s") == 86430
    assert parse_duration("2h5s") == 7205


def test_parse_rejects_malformed():
    for bad in ["", "15", "h", "3w", "1H", "1h 30m", " 5s", "-5s", "1.5h"]:
        with pytest.raises(ValueError):
            parse_duration(bad)


def test_parse_rejects_order_and_repeats():
    for bad in ["30m1h", "1s1m", "1h1h", "2m3m"]:
        with pytest.raises(ValueError):
            parse_duration(bad)


def test_format_examples():
    assert format_duration(5400) == "1h30m"
    assert format_duration(93784) == "1d2h3m4s"
    assert format_duration(3601) == "1h1s"
    assert format_duration(86400) == "1d"
    assert format_duration(59) == "59s"


def test_format_zero():
    assert format_duration(0) == "0s"


def test_format_negative():
    with pytest.raises(ValueError):
        format_duration(-1)


def test_round_trip():
    for n in [1, 60, 61, 3599, 3600, 86399, 86401, 200000, 1000000]:
        assert parse_duration(format_duration(n)) == n
