from config.ports import parse_port


def test_port():
    assert parse_port(" 8080 ") == 8080


def test_unset():
    assert parse_port("  ") is None
