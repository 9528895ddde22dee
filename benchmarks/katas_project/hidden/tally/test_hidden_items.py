import dataclasses

import pytest
from tally.items import LineItem, parse_item


def test_line_item_is_a_frozen_dataclass_with_a_total():
    item = LineItem("Widget", 3, 250)
    assert [f.name for f in dataclasses.fields(LineItem)] == [
        "description", "quantity", "unit_cents"]
    assert item.total() == 750
    with pytest.raises(dataclasses.FrozenInstanceError):
        item.quantity = 4


def test_parse_item_examples():
    assert parse_item("Widget x3 @ 2.50") == LineItem("Widget", 3, 250)
    assert parse_item("Blue pen x10 @ 0.99") == LineItem("Blue pen", 10, 99)


def test_parse_item_ignores_whitespace_around_parts():
    assert parse_item("  Tea   x2  @  3  ") == LineItem("Tea", 2, 300)


@pytest.mark.parametrize("bad", ["Widget 3 @ 2.50", "Widget x3 2.50", "Widget x0 @ 1.00",
                                 "Widget x2 @ -1.00", "Widget x2 @ 1.5"])
def test_parse_item_rejects(bad):
    with pytest.raises(ValueError):
        parse_item(bad)
