import pytest
from tally.invoice import Invoice
from tally.items import LineItem


def example():
    invoice = Invoice()
    invoice.add(LineItem("Widget", 3, 250))
    invoice.add(LineItem("Book", 1, 1000), "reduced")
    return invoice


def test_empty_invoice():
    invoice = Invoice()
    assert invoice.lines == []
    assert (invoice.subtotal(), invoice.tax(), invoice.total()) == (0, 0, 0)


def test_example_totals():
    invoice = example()
    assert invoice.lines == [(LineItem("Widget", 3, 250), "standard"),
                             (LineItem("Book", 1, 1000), "reduced")]
    assert (invoice.subtotal(), invoice.tax(), invoice.total()) == (1750, 200, 1950)


def test_tax_is_per_line():
    invoice = Invoice()
    invoice.add(LineItem("a", 1, 10), "reduced")
    invoice.add(LineItem("b", 1, 10), "reduced")
    assert invoice.tax() == 2


def test_lines_is_a_copy_and_unknown_category_adds_nothing():
    invoice = example()
    invoice.lines.clear()
    with pytest.raises(KeyError):
        invoice.add(LineItem("x", 1, 1), "luxury")
    assert len(invoice.lines) == 2


def test_codes():
    invoice = example()
    invoice.apply_code("OFF1000")
    assert invoice.total() == 950
    with pytest.raises(ValueError):
        invoice.apply_code("SAVE5")
    assert invoice.total() == 950
    invoice.apply_code("PCT10")
    assert invoice.total() == 1755
