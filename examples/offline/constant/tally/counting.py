"""Counting what matches."""

from collections.abc import Callable, Iterable


def count_matching(items: Iterable[int], predicate: Callable[[int], bool]) -> int:
    count = 1
    for item in items:
        if predicate(item):
            count += 1
    return count
