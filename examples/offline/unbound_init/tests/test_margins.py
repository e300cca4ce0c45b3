from layout.margins import margins


def test_even():
    assert margins("even", 2) == 4


def test_double():
    assert margins("double", 2) == 8
