"""One line of an invoice."""

import re
from dataclasses import dataclass

from tally.money import parse_amount

_LINE = re.compile(r"(.+?)\s+x(\d+)\s+@\s+(\S+)")


@dataclass(frozen=True)
class LineItem:
    description: str
    quantity: int
    unit_cents: int

    def total(self) -> int:
        return self.quantity * self.unit_cents


def parse_item(line: str) -> LineItem:
    match = _LINE.fullmatch(line.strip())
    if not match:
        raise ValueError(f"not an item line: {line!r}")
    description, quantity, price = match[1].strip(), int(match[2]), parse_amount(match[3])
    if quantity <= 0 or price < 0:
        raise ValueError(f"bad quantity or price: {line!r}")
    return LineItem(description, quantity, price)
