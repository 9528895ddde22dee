import pytest
from intervals import gaps, merge, total_length


def test_merge_overlapping():
    assert merge([[1, 3], [2, 6], [8, 10], [15, 18]]) == [[1, 6], [8, 10], [15, 18]]
    assert merge([[1, 10], [2, 3], [4, 5]]) == [[1, 10]]


def test_merge_touching_and_adjacent():
    assert merge([[1, 4], [4, 5]]) == [[1, 5]]
    assert merge([[1, 2], [3, 4]]) == [[1, 2], [3, 4]]


def test_merge_unsorted_input():
    assert merge([[5, 7], [1, 2], [6, 9]]) == [[1, 2], [5, 9]]
    assert merge([[20, 25], [0, 1], [10, 12], [11, 21]]) == [[0, 1], [10, 25]]


def test_merge_edge_cases():
    assert merge([]) == []
    assert merge([[3, 3]]) == [[3, 3]]
    assert merge([[3, 3], [3, 3], [1, 3]]) == [[1, 3]]


def test_merge_does_not_modify_input():
    given = [[5, 7], [1, 2], [6, 9]]
    assert merge(given) == [[1, 2], [5, 9]]
    assert given == [[5, 7], [1, 2], [6, 9]]


def test_total_length():
    assert total_length([[1, 3], [2, 6], [8, 10]]) == 7
    assert total_length([[0, 5], [5, 10]]) == 10
    assert total_length([[2, 2]]) == 0
    assert total_length([]) == 0


def test_gaps():
    assert gaps([[1, 3], [6, 8], [10, 12]]) == [[3, 6], [8, 10]]
    assert gaps([[6, 8], [1, 7]]) == []
    assert gaps([[1, 2], [3, 4]]) == [[2, 3]]
    assert gaps([[12, 14], [1, 3]]) == [[3, 12]]
    assert gaps([]) == []


def test_start_after_end_raises():
    with pytest.raises(ValueError):
        merge([[4, 1]])
    with pytest.raises(ValueError):
        total_length([[1, 2], [5, 4]])
    with pytest.raises(ValueError):
        gaps([[0, 1], [9, 7]])
