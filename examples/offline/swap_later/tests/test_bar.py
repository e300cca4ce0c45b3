from progress.bar import progress


def test_full():
    assert progress(5, 5) == "5/5 ##### #"


def test_partial():
    assert progress(3, 5) == "3/5 ###.. ."
