from clock import greeting
from freezegun import freeze_time


@freeze_time("2026-01-01 09:00:00")
def test_morning():
    assert greeting() == "good morning"


@freeze_time("2026-01-01 12:30:00")
def test_half_past_noon():
    assert greeting() == "good afternoon"


@freeze_time("2026-01-01 15:00:00")
def test_afternoon():
    assert greeting() == "good afternoon"
