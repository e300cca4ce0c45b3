from config.ports import parse_port


def test_number():
    assert parse_port("8000") == 8000


def test_malformed():
    assert parse_port("eighty") == 8080


def test_missing():
    assert parse_port(None) == 8080
