from stats.median import median


def test_median():
    assert median([3, 1, 2]) == 2
    assert median([9, 7, 5, 3, 1]) == 5
