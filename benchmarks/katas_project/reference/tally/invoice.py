"""An invoice: line items with tax categories and at most one discount code."""

from tally.discounts import apply_discount, parse_code
from tally.items import LineItem
from tally.tax import RATES, tax_cents


class Invoice:
    def __init__(self) -> None:
        self._lines: list[tuple[LineItem, str]] = []
        self.code: str | None = None

    def add(self, item: LineItem, category: str = "standard") -> None:
        if category not in RATES:
            raise KeyError(category)
        self._lines.append((item, category))

    @property
    def lines(self) -> list[tuple[LineItem, str]]:
        return list(self._lines)

    def apply_code(self, code: str) -> None:
        parse_code(code)
        self.code = code

    def subtotal(self) -> int:
        return sum(item.total() for item, _ in self._lines)

    def tax(self) -> int:
        return sum(tax_cents(item.total(), category) for item, category in self._lines)

    def total(self) -> int:
        gross = self.subtotal() + self.tax()
        return gross if self.code is None else apply_discount(gross, self.code)
