"""Reference solution for specs/geometry.md (validates the hidden tests only)."""

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Point:
    x: float
    y: float

    def distance_to(self, other: "Point") -> float:
        return math.hypot(self.x - other.x, self.y - other.y)

    def translated(self, dx: float, dy: float) -> "Point":
        return Point(self.x + dx, self.y + dy)


@dataclass(frozen=True)
class Rect:
    x: float
    y: float
    width: float
    height: float

    def __post_init__(self) -> None:
        if self.width < 0 or self.height < 0:
            raise ValueError(f"negative size: {self.width} x {self.height}")

    def area(self) -> float:
        return self.width * self.height

    def center(self) -> Point:
        return Point(self.x + self.width / 2, self.y + self.height / 2)

    def contains(self, point: Point) -> bool:
        return (self.x <= point.x <= self.x + self.width
                and self.y <= point.y <= self.y + self.height)

    def intersection(self, other: "Rect") -> "Rect | None":
        left, bottom = max(self.x, other.x), max(self.y, other.y)
        right = min(self.x + self.width, other.x + other.width)
        top = min(self.y + self.height, other.y + other.height)
        if right <= left or top <= bottom:
            return None
        return Rect(left, bottom, right - left, top - bottom)


def bounding_box(points: list[Point]) -> Rect:
    if not points:
        raise ValueError("no points")
    xs, ys = [p.x for p in points], [p.y for p in points]
    return Rect(min(xs), min(ys), max(xs) - min(xs), max(ys) - min(ys))
