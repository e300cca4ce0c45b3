from text.words import count_words


def test_count_words():
    assert count_words("a b a") == {"a": 2, "b": 1}
