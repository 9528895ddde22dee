import pytest
from tally.items import LineItem
from tally.parse import parse_invoice

TEXT = """# shop order
Widget x3 @ 2.50

Book x1 @ 10.00 ;  Reduced
code OFF1000
"""


def test_parse_example():
    invoice = parse_invoice(TEXT)
    assert invoice.lines == [(LineItem("Widget", 3, 250), "standard"),
                             (LineItem("Book", 1, 1000), "reduced")]
    assert invoice.total() == 950


def test_parse_empty_text():
    invoice = parse_invoice("\n# nothing\n")
    assert invoice.lines == [] and invoice.total() == 0


@pytest.mark.parametrize(("text", "line"), [
    ("Widget x3 @ 2.50\n\nWidget three @ 2.50", 3),
    ("# a\nTea x1 @ 1.00; luxury", 2),
    ("code SAVE5", 1),
])
def test_parse_errors_name_the_line(text, line):
    with pytest.raises(ValueError, match=rf"^line {line}:"):
        parse_invoice(text)
