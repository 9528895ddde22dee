"""Discount codes."""

import re

_CODE = re.compile(r"(PCT|OFF)(\d+)")


def parse_code(code: str) -> tuple[str, int]:
    match = _CODE.fullmatch(code.strip().upper())
    if not match:
        raise ValueError(f"not a discount code: {code!r}")
    kind, value = match[1], int(match[2])
    if kind == "PCT":
        if not 1 <= value <= 100:
            raise ValueError(f"percent out of range: {code!r}")
        return "percent", value
    if value <= 0:
        raise ValueError(f"nothing off: {code!r}")
    return "fixed", value


def apply_discount(cents: int, code: str) -> int:
    kind, value = parse_code(code)
    if kind == "percent":
        return cents - cents * value // 100
    return max(0, cents - value)
