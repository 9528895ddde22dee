"""Amounts of money as integer cents."""

import re

_AMOUNT = re.compile(r"-?\d+(\.\d\d)?")


def parse_amount(text: str) -> int:
    s = text.strip()
    if not _AMOUNT.fullmatch(s):
        raise ValueError(f"not an amount: {text!r}")
    negative = s.startswith("-")
    whole, _, frac = s.lstrip("-").partition(".")
    cents = int(whole) * 100 + int(frac or "0")
    return -cents if negative else cents


def format_amount(cents: int) -> str:
    sign = "-" if cents < 0 else ""
    whole, frac = divmod(abs(cents), 100)
    return f"{sign}{whole:,}.{frac:02d}"
