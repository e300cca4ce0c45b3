from filters.numbers import nonzero


def test_empty():
    assert nonzero([]) == []


def test_negative_values_are_kept():
    assert nonzero([-1, 0, 2]) == [-1, 2]
