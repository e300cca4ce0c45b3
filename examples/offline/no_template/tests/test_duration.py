from timeparse.duration import parse_duration


def test_single_unit():
    assert parse_duration("45s") == 45


def test_two_units():
    assert parse_duration("1h30m") == 5400
