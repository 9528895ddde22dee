"""Reference solution for specs/ledger.md (validates the hidden tests only)."""

import re

_AMOUNT = re.compile(r"(-?)(\d+)(?:\.(\d\d))?")


def parse_row(line: str) -> tuple[str, str, int]:
    if not isinstance(line, str):
        raise TypeError(f"a row is a str, not {type(line).__name__}")
    fields = [field.strip() for field in line.split(",")]
    if len(fields) != 3:
        raise ValueError(f"expected 3 fields, got {len(fields)}: {line!r}")
    date, category, amount = fields
    if not category:
        raise ValueError(f"empty category: {line!r}")
    match = _AMOUNT.fullmatch(amount)
    if match is None:
        raise ValueError(f"not an amount: {amount!r}")
    sign, whole, cents = match.groups()
    value = int(whole) * 100 + int(cents or 0)
    return date, category.lower(), -value if sign else value
