from words.first import first_word


def test_shouted():
    assert first_word("HELLO world") == "hello"


def test_plain():
    assert first_word("Hi there") == "Hi"


def test_blank():
    assert first_word("   ") == ""
