import dataclasses

import pytest
from geometry import Point, Rect, bounding_box


def test_point_dataclass_and_translated():
    p = Point(1.0, 2.0)
    assert [f.name for f in dataclasses.fields(Point)] == ["x", "y"]
    assert (p.x, p.y) == (1.0, 2.0)
    assert p == Point(1.0, 2.0)
    assert p != Point(2.0, 1.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.x = 5.0
    q = p.translated(3, -1)
    assert q == Point(4, 1)
    assert p == Point(1, 2)


def test_point_distance():
    assert Point(0, 0).distance_to(Point(3, 4)) == pytest.approx(5.0)
    assert Point(1, 1).distance_to(Point(1, 1)) == 0
    assert Point(-1, 2).distance_to(Point(2, -2)) == pytest.approx(5.0)


def test_rect_dataclass_and_area():
    r = Rect(1, 2, 3, 4)
    assert [f.name for f in dataclasses.fields(Rect)] == ["x", "y", "width", "height"]
    assert (r.x, r.y, r.width, r.height) == (1, 2, 3, 4)
    assert r == Rect(1, 2, 3, 4)
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.width = 10
    assert r.area() == 12
    assert Rect(0, 0, 4, 3).area() == 12


def test_rect_size_validation():
    assert Rect(0, 0, 0, 0).area() == 0
    with pytest.raises(ValueError):
        Rect(0, 0, -1, 2)
    with pytest.raises(ValueError):
        Rect(0, 0, 2, -0.5)


def test_rect_center():
    assert Rect(0, 0, 4, 3).center() == Point(2.0, 1.5)
    assert Rect(-2, 1, 2, 6).center() == Point(-1.0, 4.0)


def test_rect_contains_edges_included():
    r = Rect(0, 0, 4, 3)
    assert r.contains(Point(4, 3))
    assert r.contains(Point(0, 0))
    assert r.contains(Point(2, 1))
    assert not r.contains(Point(4.5, 1))
    assert not r.contains(Point(1, -0.1))
    assert not Rect(1, 1, 2, 2).contains(Point(0.5, 2))


def test_rect_intersection():
    assert Rect(0, 0, 4, 4).intersection(Rect(2, 1, 5, 2)) == Rect(2, 1, 2, 2)
    assert Rect(2, 1, 5, 2).intersection(Rect(0, 0, 4, 4)) == Rect(2, 1, 2, 2)
    assert Rect(0, 0, 10, 10).intersection(Rect(3, 3, 1, 1)) == Rect(3, 3, 1, 1)
    assert Rect(0, 0, 2, 2).intersection(Rect(2, 0, 2, 2)) is None
    assert Rect(0, 0, 2, 2).intersection(Rect(2, 2, 1, 1)) is None
    assert Rect(0, 0, 1, 1).intersection(Rect(5, 5, 1, 1)) is None


def test_bounding_box():
    assert bounding_box([Point(1, 5), Point(4, 2), Point(3, 3)]) == Rect(1, 2, 3, 3)
    assert bounding_box([Point(2, 7)]) == Rect(2, 7, 0, 0)
    with pytest.raises(ValueError):
        bounding_box([])
