import pytest
from gradebook import Gradebook


def test_record_and_scores():
    book = Gradebook()
    assert book.record("ana", 90) is None
    assert book.scores("ana") == [90]


def test_scores_in_recorded_order():
    book = Gradebook()
    for score in [90, 70, 95]:
        book.record("ana", score)
    assert book.scores("ana") == [90, 70, 95]


def test_scores_returns_a_copy():
    book = Gradebook()
    book.record("ana", 90)
    book.scores("ana").append(1)
    book.scores("ana").clear()
    assert book.scores("ana") == [90]


def test_average_is_plain_mean():
    book = Gradebook()
    book.record("ana", 90)
    book.record("ana", 70)
    assert book.average("ana") == 80.0
    book.record("ana", 71)
    assert book.average("ana") == pytest.approx(77.0)
    book.record("bo", 1)
    book.record("bo", 2)
    assert book.average("bo") == pytest.approx(1.5)


def test_out_of_range_rejected_and_not_recorded():
    book = Gradebook()
    book.record("ana", 50)
    for bad in [-1, 100.5, 101]:
        with pytest.raises(ValueError):
            book.record("ana", bad)
    assert book.scores("ana") == [50]
    with pytest.raises(ValueError):
        book.record("zed", 150)
    assert book.students() == ["ana"]


def test_bounds_accepted():
    book = Gradebook()
    book.record("ana", 0)
    book.record("ana", 100)
    book.record("ana", 55.5)
    assert book.scores("ana") == [0, 100, 55.5]


def test_unknown_student_key_error():
    book = Gradebook()
    with pytest.raises(KeyError):
        book.scores("nobody")
    with pytest.raises(KeyError):
        book.average("nobody")
    book.record("ana", 10)
    with pytest.raises(KeyError):
        book.average("Ana")


def test_students_sorted_once():
    book = Gradebook()
    assert book.students() == []
    for name in ["cy", "ana", "ben", "ana"]:
        book.record(name, 60)
    assert book.students() == ["ana", "ben", "cy"]


def test_top_example_and_ties():
    book = Gradebook()
    book.record("ana", 90)
    book.record("ana", 70)
    book.record("ben", 85)
    book.record("cy", 80)
    assert book.top(2) == [("ben", 85.0), ("ana", 80.0)]
    assert book.top(3) == [("ben", 85.0), ("ana", 80.0), ("cy", 80.0)]


def test_top_bounds():
    book = Gradebook()
    book.record("ana", 90)
    book.record("ben", 95)
    assert book.top(10) == [("ben", 95.0), ("ana", 90.0)]
    assert book.top(0) == []
    with pytest.raises(ValueError):
        book.top(-1)
