import pytest
from batches.split import batches


def test_batches():
    assert list(batches([1, 2, 3, 4, 5], 2)) == [[1, 2], [3, 4], [5]]


def test_strict_empty():
    assert list(batches([], 3, strict=True)) == []


def test_strict_yields_the_full_batches_then_refuses_the_short_one():
    it = batches([1, 2, 3], 2, strict=True)
    assert next(it) == [1, 2]
    with pytest.raises(ValueError, match="has 1 items"):
        next(it)


def test_strict_full_batches():
    assert list(batches([1, 2, 3, 4], 2, strict=True)) == [[1, 2], [3, 4]]
