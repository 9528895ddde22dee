import pytest
from tally.tax import RATES, tax_cents


def test_rates():
    assert RATES == {"standard": 20, "reduced": 5, "zero": 0}


def test_tax_examples_round_half_up():
    assert tax_cents(1250, "standard") == 250
    assert tax_cents(999, "reduced") == 50
    assert tax_cents(10, "reduced") == 1
    assert tax_cents(9, "reduced") == 0
    assert tax_cents(1, "standard") == 0
    assert tax_cents(3, "standard") == 1
    assert tax_cents(5000, "zero") == 0


def test_tax_errors():
    with pytest.raises(KeyError):
        tax_cents(100, "luxury")
    with pytest.raises(ValueError):
        tax_cents(-100, "standard")
