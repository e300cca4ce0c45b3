from metrics.mean import average


def test_average():
    assert average([1, 2, 3]) == 2


def test_no_values():
    assert average([]) is None
