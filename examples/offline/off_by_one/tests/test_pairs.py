from seq.pairs import pairs


def test_empty():
    assert pairs([]) == []


def test_pairs():
    assert pairs([1, 2, 3]) == [(1, 2), (2, 3)]
