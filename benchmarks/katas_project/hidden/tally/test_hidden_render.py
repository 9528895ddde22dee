from tally.invoice import Invoice
from tally.items import LineItem
from tally.render import render


def example():
    invoice = Invoice()
    invoice.add(LineItem("Widget", 3, 250))
    invoice.add(LineItem("Book", 1, 1000), "reduced")
    return invoice


def test_render_with_a_code():
    invoice = example()
    invoice.apply_code("OFF1000")
    assert render(invoice) == ("Widget x3 @ 2.50 = 7.50\nBook x1 @ 10.00 = 10.00\n"
                               "Subtotal: 17.50\nTax: 2.00\nDiscount: -10.00\nTotal: 9.50")


def test_render_without_a_code_has_no_discount_line():
    assert render(example()) == ("Widget x3 @ 2.50 = 7.50\nBook x1 @ 10.00 = 10.00\n"
                                 "Subtotal: 17.50\nTax: 2.00\nTotal: 19.50")


def test_render_empty_and_thousands():
    assert render(Invoice()) == "Subtotal: 0.00\nTax: 0.00\nTotal: 0.00"
    invoice = Invoice()
    invoice.add(LineItem("Desk", 2, 60000), "zero")
    assert render(invoice) == ("Desk x2 @ 600.00 = 1,200.00\nSubtotal: 1,200.00\n"
                               "Tax: 0.00\nTotal: 1,200.00")
