from prices.lookup import price_of


def test_known():
    assert price_of({"apple": 3}, "apple") == 3


def test_any_case():
    assert price_of({"apple": 3}, "Apple") == 3
