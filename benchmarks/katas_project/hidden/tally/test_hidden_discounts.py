import pytest
from tally.discounts import apply_discount, parse_code


def test_parse_code_examples():
    assert parse_code("PCT10") == ("percent", 10)
    assert parse_code("off500") == ("fixed", 500)
    assert parse_code("Pct100") == ("percent", 100)
    assert parse_code("PCT1") == ("percent", 1)


@pytest.mark.parametrize("bad", ["PCT0", "PCT101", "OFF0", "SAVE5", "PCT", "10PCT", ""])
def test_parse_code_rejects(bad):
    with pytest.raises(ValueError):
        parse_code(bad)


def test_percent_discount_rounds_the_discount_down():
    assert apply_discount(999, "PCT10") == 900
    assert apply_discount(1000, "pct25") == 750
    assert apply_discount(1000, "PCT100") == 0


def test_fixed_discount_never_below_zero():
    assert apply_discount(300, "OFF500") == 0
    assert apply_discount(1000, "OFF250") == 750
    with pytest.raises(ValueError):
        apply_discount(1000, "SAVE5")
