"""Hidden acceptance tests for specs/inventory.md (never shown to the pipeline)."""

import pytest
from kata.inventory import Inventory


def test_new_is_empty() -> None:
    inv = Inventory()
    assert (inv.count("apple"), inv.items(), inv.total()) == (0, [], 0)


def test_add_accumulates() -> None:
    inv = Inventory()
    inv.add("apple", 3)
    inv.add("apple", 2)
    assert inv.count("apple") == 5


def test_remove_some() -> None:
    inv = Inventory()
    inv.add("apple", 5)
    inv.remove("apple", 2)
    assert inv.count("apple") == 3


def test_remove_all_drops_item() -> None:
    inv = Inventory()
    inv.add("apple", 2)
    inv.add("pear", 1)
    inv.remove("apple", 2)
    assert inv.count("apple") == 0 and inv.items() == [("pear", 1)]


def test_items_sorted_and_total() -> None:
    inv = Inventory()
    inv.add("pear", 1)
    inv.add("apple", 4)
    assert inv.items() == [("apple", 4), ("pear", 1)]
    assert inv.total() == 5


@pytest.mark.parametrize("quantity", [0, -1])
def test_add_non_positive_raises(quantity: int) -> None:
    inv = Inventory()
    with pytest.raises(ValueError):
        inv.add("apple", quantity)
    assert inv.items() == []


@pytest.mark.parametrize("quantity", [0, -1])
def test_remove_non_positive_raises(quantity: int) -> None:
    inv = Inventory()
    inv.add("apple", 2)
    with pytest.raises(ValueError):
        inv.remove("apple", quantity)
    assert inv.count("apple") == 2


def test_remove_too_many_changes_nothing() -> None:
    inv = Inventory()
    inv.add("apple", 2)
    with pytest.raises(ValueError):
        inv.remove("apple", 3)
    assert inv.count("apple") == 2 and inv.total() == 2


def test_remove_unknown_raises() -> None:
    with pytest.raises(ValueError):
        Inventory().remove("kiwi", 1)


def test_instances_are_separate() -> None:
    a, b = Inventory(), Inventory()
    a.add("apple", 1)
    assert b.count("apple") == 0 and b.items() == []
