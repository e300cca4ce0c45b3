from tally.counting import count_matching


def test_count():
    assert count_matching([1, 2, 3], lambda x: x > 1) == 2
