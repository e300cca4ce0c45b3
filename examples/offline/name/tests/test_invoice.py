from billing.invoice import total


def test_total():
    assert total([10.0, 5.0], 0.2) == 18.0
