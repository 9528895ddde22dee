"""Reference solution for specs/intervals.md (validates the hidden tests only)."""
import itertools


def merge(intervals: list[list[int]]) -> list[list[int]]:
    for start, end in intervals:
        if start > end:
            raise ValueError(f"start after end: {[start, end]}")
    merged: list[list[int]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return merged


def total_length(intervals: list[list[int]]) -> int:
    return sum(end - start for start, end in merge(intervals))


def gaps(intervals: list[list[int]]) -> list[list[int]]:
    merged = merge(intervals)
    return [[a[1], b[0]] for a, b in itertools.pairwise(merged)]
