from modern.windows import windows


def test_empty():
    assert windows([]) == []


def test_pairs():
    assert windows([1, 2, 3]) == [(1, 2), (2, 3)]
