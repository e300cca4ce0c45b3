from units.clamp import clamp, percent


def test_clamp():
    assert clamp(5, 0, 3) == 3


def test_percent():
    assert percent(150) == 100
    assert percent(-3) == 0
    assert percent(42) == 42
