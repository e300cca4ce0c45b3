"""Near and far strategies for numbers and for the standard library's values the box rebuilds through their own
constructors (sandbox/plain.py): an integer meets numbers of its sign and size and the same amount as a float, a
Decimal and a Fraction; decimals, fractions, dates, times, durations and ranges are drawn as their own types.
Part of the held-out judge's strategies (strategies.py); each function answers (near, far).
"""

from __future__ import annotations

from datetime import date, datetime, time, timedelta
from decimal import Decimal
from fractions import Fraction
from typing import Any

from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy

HUGE = (2**31, 2**63, -(2**31), 10**12, 2**100)


def int_kinds(v: int) -> tuple[SearchStrategy[int], SearchStrategy[Any]]:
    digits = len(str(abs(v)))
    size = st.integers(10 ** (digits - 1) if digits > 1 else 0, 10**digits - 1).map(lambda n: n if v >= 0 else -n)
    if v > 0:
        sign = st.integers(1, max(100, 4 * v))
    elif v < 0:
        sign = st.integers(min(-100, 4 * v), -1)
    else:
        sign = st.integers(-5, 5)
    near = st.one_of(st.integers(v - 10, v + 10), size, sign)
    numbers = st.sampled_from([float(v), Decimal(v), Fraction(v), float(v) + 0.5])  # the same amount, other types
    far = st.one_of(st.just(0), st.just(-v or -1), st.integers(-(10**6), 10**6), st.sampled_from(HUGE), st.none(),
                    numbers)
    return near, far


def _decimal(v: Decimal) -> tuple[SearchStrategy[Any], SearchStrategy[Any]]:
    exponent = v.as_tuple().exponent
    places = -exponent if isinstance(exponent, int) and exponent < 0 else 0
    span = abs(v) * 10 + 1 if v.is_finite() else Decimal(100)
    near = st.decimals(v - span, v + span, places=places, allow_nan=False) if v.is_finite() else st.decimals()
    return near, st.one_of(st.just(Decimal(0)), st.just(-v), st.decimals(), st.none(),
                           st.sampled_from([float(v), int(v) if v.is_finite() else 0]))


def _fraction(v: Fraction) -> tuple[SearchStrategy[Any], SearchStrategy[Any]]:
    span = abs(v) * 10 + 1
    return (st.fractions(v - span, v + span, max_denominator=max(v.denominator * 4, 10)),
            st.one_of(st.just(Fraction(0)), st.just(-v), st.none(), st.just(float(v))))


def _moment(v: Any) -> tuple[SearchStrategy[Any], SearchStrategy[Any]]:
    """Dates and times through their own constructors: near ones around it, far ones at the ends of the range."""
    year = timedelta(days=366)
    if isinstance(v, datetime):  # an aware one: near ones at its offset, its wall time naive among the far ones
        naive = v.replace(tzinfo=None)
        low, high = max(datetime.min, naive - 10 * year), min(datetime.max, naive + 10 * year)
        zone: SearchStrategy[Any] = st.just(v.tzinfo) if v.tzinfo is not None else st.none()
        ends = [datetime.min, datetime.max, *([naive] if v.tzinfo is not None else [])]
        return st.datetimes(low, high, timezones=zone), st.one_of(st.sampled_from(ends), st.none())
    if isinstance(v, date):
        low_d, high_d = max(date.min, v - 10 * year), min(date.max, v + 10 * year)
        return st.dates(low_d, high_d), st.one_of(st.sampled_from([date.min, date.max]), st.none())
    if isinstance(v, time):
        at: SearchStrategy[Any] = st.just(v.tzinfo) if v.tzinfo is not None else st.none()
        return st.times(timezones=at), st.one_of(st.just(time()), st.none())
    span = abs(v) * 10 + timedelta(seconds=1)
    return (st.timedeltas(-span, span),
            st.one_of(st.just(timedelta(0)), st.just(-v), st.sampled_from([timedelta.min, timedelta.max]), st.none()))


def _range(v: range) -> tuple[SearchStrategy[range], SearchStrategy[Any]]:
    """Ranges through their own constructor: near bounds and steps of the same sign; far: empty, reversed, None."""
    span = abs(v.stop - v.start) + 3
    step = st.sampled_from(sorted({v.step, 1 if v.step > 0 else -1, 2 * v.step}))
    near = st.builds(range, st.integers(v.start - 3, v.start + 3), st.integers(v.stop - span, v.stop + span), step)
    return near, st.one_of(st.just(range(0)), st.just(v[::-1]), st.none())


STDLIB: dict[type, Any] = {Decimal: _decimal, Fraction: _fraction, datetime: _moment, date: _moment,
                            time: _moment, timedelta: _moment, range: _range}
"""Values of the standard library the box rebuilds through their own constructors (sandbox/plain.py)."""
