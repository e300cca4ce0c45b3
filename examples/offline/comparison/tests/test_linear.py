from search.linear import find_index


def test_found():
    assert find_index([4, 5, 6], 5) == 1


def test_absent():
    assert find_index([4, 5, 6], 7) == -1
