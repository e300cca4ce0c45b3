from limits.table import default_limit, limit


def test_limit():
    assert limit("large") == 100


def test_default():
    assert default_limit() == 50
