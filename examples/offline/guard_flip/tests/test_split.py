import pytest
from batches.split import batches


def test_batches():
    assert batches([1, 2, 3, 4, 5], 2) == [[1, 2], [3, 4], [5]]


def test_strict_refuses_a_short_last_batch():
    with pytest.raises(ValueError, match="has 1 items"):
        batches([1, 2, 3], 2, strict=True)


def test_strict_empty():
    assert batches([], 3, strict=True) == []


def test_strict_full_batches():
    assert batches([1, 2, 3, 4], 2, strict=True) == [[1, 2], [3, 4]]
