"""Reference solution for specs/units.md (validates the hidden tests only)."""

import re

_SIZES = {
    "length": {"mm": 0.001, "cm": 0.01, "m": 1, "km": 1000, "in": 0.0254, "ft": 0.3048,
               "mi": 1609.344},
    "mass": {"mg": 0.001, "g": 1, "kg": 1000, "oz": 28.349523125, "lb": 453.59237},
    "time": {"ms": 0.001, "s": 1, "min": 60, "h": 3600, "day": 86400},
}
_UNITS = {unit: (dim, size) for dim, sizes in _SIZES.items() for unit, size in sizes.items()}
_QUANTITY = re.compile(r"\s*(-?\d+(?:\.\d+)?) +(\S+)\s*")


def dimension(unit: str) -> str:
    return _UNITS[unit][0]


def convert(value: float, from_unit: str, to_unit: str) -> float:
    (from_dim, from_size), (to_dim, to_size) = _UNITS[from_unit], _UNITS[to_unit]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"not a number: {value!r}")
    if from_dim != to_dim:
        raise ValueError(f"cannot convert {from_dim} to {to_dim}")
    if from_unit == to_unit:
        return float(value)
    return value * from_size / to_size


def parse_quantity(text: str) -> tuple[float, str]:
    if not isinstance(text, str):
        raise TypeError(f"not a str: {text!r}")
    match = _QUANTITY.fullmatch(text)
    if match is None:
        raise ValueError(f"not a quantity: {text!r}")
    number, unit = match.groups()
    dimension(unit)
    return float(number), unit
