import pytest
from report import format_cents, monthly, totals
from rows import parse_row

LINES = [
    "2024-03-05, Groceries, 12.50",
    "2024-03-07,transport,3",
    "# this line is a comment",
    "2024-04-01 , groceries , -4.00",
]


def test_parse_row_example():
    assert parse_row("2024-03-05, Groceries, 12.50") == ("2024-03-05", "groceries", 1250)


def test_parse_row_amounts():
    assert parse_row("d,c,3")[2] == 300
    assert parse_row("d,c,0.99")[2] == 99
    assert parse_row("d,c,-4.00")[2] == -400
    assert parse_row(" 2024-01-01 ,  Rent ,1200.05 ") == ("2024-01-01", "rent", 120005)


def test_parse_row_bad_amounts():
    for bad in ["1.5", "1.505", ".50", "+3", "abc", "", "1.", "- 3"]:
        with pytest.raises(ValueError):
            parse_row(f"2024-01-01,food,{bad}")


def test_parse_row_bad_fields():
    for bad in ["2024-01-01,food", "2024-01-01,food,12,50", "2024-01-01, ,5", ""]:
        with pytest.raises(ValueError):
            parse_row(bad)


def test_parse_row_type_error():
    assert parse_row("d,c,1") == ("d", "c", 100)
    for bad in [None, 12.5, 1250]:
        with pytest.raises(TypeError):
            parse_row(bad)


def test_totals_example():
    result = totals(LINES)
    assert result == {"groceries": 850, "transport": 300}
    assert list(result) == ["groceries", "transport"]


def test_totals_skips_and_sorts():
    lines = ["", "   ", "  # note", "x,Zoo,1", "x,apple,2", "x,ZOO,0.50"]
    result = totals(lines)
    assert result == {"apple": 200, "zoo": 150}
    assert list(result) == ["apple", "zoo"]
    assert totals([]) == {}


def test_monthly_example():
    result = monthly([*LINES, "2024-01-31,food,1"])
    assert result == {"2024-01": 100, "2024-03": 1550, "2024-04": -400}
    assert list(result) == ["2024-01", "2024-03", "2024-04"]
    assert monthly([]) == {}


def test_broken_line_number():
    lines = ["2024-01-01,food,1", "# c", "", "2024-01-02,food,oops"]
    with pytest.raises(ValueError, match="line 4"):
        totals(lines)
    with pytest.raises(ValueError, match="line 2"):
        monthly(["2024-01-01,food,1", "2024-01-02,food"])


def test_format_cents():
    assert format_cents(1250) == "12.50"
    assert format_cents(5) == "0.05"
    assert format_cents(-400) == "-4.00"
    assert format_cents(0) == "0.00"
    assert format_cents(123456) == "1234.56"
    assert format_cents(-5) == "-0.05"
