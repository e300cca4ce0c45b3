from notify.bulletin import announce, make_formatter


def test_formatter():
    assert make_formatter("a")("b") == "a: b"


def test_announce():
    assert announce("build", "ok") == "build: ok"
