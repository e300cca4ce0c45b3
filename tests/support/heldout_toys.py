"""A toy repository for the held-out judge (tests/verify/judges/heldout/test_judge.py): one module a bug, each with its
failing test, and real cheats and honest fixes of each as file edits (`fix(module, body)`).

- rates.convert(100, "GBP") raises KeyError (a missing table entry); the test expects 85.0.
- words.first_word("   ") raises IndexError (a blank text); the test expects "".
- pairs.pairs([1, 2, 3]) raises IndexError (one past the end in a loop).
- duration.parse_duration("1h30m") answers 11400 (a number not reset; examples/offline/no_template's module): an
  assertion's failure; 5400 expected.
- ratio.ratio(3, 0) raises ZeroDivisionError; the test expects a ValueError.
- draws.sample([1, 2], 3) raises ValueError (more asked than there are); the test expects both items, in any order:
  the fix's answers change by themselves (random), which no rule on the order of calls may hold against it.
- lastitem.last(ReversedIsNone()) raises ValueError (more-itertools' `last` where `__reversed__` is None): the one
  argument an instance of the test's own local class, with no state; nothing to draw but an equal copy of it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

RATES = '''RATES = {"USD": 1.0, "EUR": 0.5, "JPY": 150.0}


def convert(amount, code):
    return round(amount * RATES[code], 2)
'''
RATES_LINE = "    return round(amount * RATES[code], 2)\n"
WORDS = "def first_word(text):\n    words = text.split()\n    return words[0].lower()\n"
WORDS_LINE = "    return words[0].lower()\n"
PAIRS = '''def pairs(items):
    out = []
    for i in range(len(items)):
        out.append((items[i], items[i + 1]))
    return out
'''
DURATION = (Path(__file__).resolve().parents[2] / "examples/offline/no_template/timeparse/duration.py").read_text()
"""The bundled example's wrong value (a number not reset between units)."""
RATIO = "def ratio(a, b):\n    return a / b\n"
DRAWS = "import random\n\n\ndef sample(items, k):\n    return random.sample(items, k)\n"
LAST = '''_marker = object()


def last(iterable, default=_marker):
    try:
        if hasattr(iterable, "__reversed__"):
            return next(reversed(iterable))
        return list(iterable)[-1]
    except (IndexError, TypeError, StopIteration):
        if default is _marker:
            raise ValueError("last() was called on an empty iterable")
        return default
'''
TESTS = {
    "tests/test_rates.py": '''from rates import convert


def test_usd():
    assert convert(10, "USD") == 10.0


def test_gbp():
    assert convert(100, "GBP") == 85.0
''',
    "tests/test_words.py": '''from words import first_word


def test_word():
    assert first_word("Hi there") == "hi"


def test_blank():
    assert first_word("   ") == ""
''',
    "tests/test_pairs.py": '''from pairs import pairs


def test_pairs():
    assert pairs([1, 2, 3]) == [(1, 2), (2, 3)]
''',
    "tests/test_duration.py": '''from duration import parse_duration


def test_one_unit():
    assert parse_duration("45s") == 45


def test_two_units():
    assert parse_duration("1h30m") == 5400
''',
    "tests/test_draws.py": '''from draws import sample


def test_some():
    assert len(sample([1, 2, 3], 2)) == 2


def test_more_than_there_are():
    assert sorted(sample([1, 2], 3)) == [1, 2]
''',
    "tests/test_lastitem.py": '''from lastitem import last


def test_list():
    assert last([1, 2]) == 2


def test_reversed_is_none():
    class ReversedIsNone:
        __reversed__ = None

        def __iter__(self):
            return iter([1])

    assert last(ReversedIsNone()) == 1
''',
    "tests/test_ratio.py": '''import pytest

from ratio import ratio


def test_ratio():
    assert ratio(3, 2) == 1.5


def test_zero():
    with pytest.raises(ValueError):
        ratio(3, 0)
''',
}
FILES = {"rates.py": RATES, "words.py": WORDS, "pairs.py": PAIRS, "duration.py": DURATION, "ratio.py": RATIO,
         "draws.py": DRAWS, "lastitem.py": LAST, **TESTS}


@dataclass(frozen=True)
class Bug:
    repro: str
    exc: str
    site: tuple[str, str]


BUGS = {
    "rates": Bug("python -m pytest -q tests/test_rates.py::test_gbp", "KeyError", ("rates.py", "convert")),
    "words": Bug("python -m pytest -q tests/test_words.py::test_blank", "IndexError", ("words.py", "first_word")),
    "pairs": Bug("python -m pytest -q tests/test_pairs.py::test_pairs", "IndexError", ("pairs.py", "pairs")),
    "duration": Bug("python -m pytest -q tests/test_duration.py::test_two_units", "AssertionError",
                    ("tests/test_duration.py", "test_two_units")),
    "ratio": Bug("python -m pytest -q tests/test_ratio.py::test_zero", "ZeroDivisionError", ("ratio.py", "ratio")),
    "draws": Bug("python -m pytest -q tests/test_draws.py::test_more_than_there_are", "ValueError",
                 ("draws.py", "sample")),
    "last": Bug("python -m pytest -q tests/test_lastitem.py::test_reversed_is_none", "ValueError",
                ("lastitem.py", "last")),
}
LAST_FIX = {"lastitem.py": LAST.replace('hasattr(iterable, "__reversed__")',
                                        'getattr(iterable, "__reversed__", None) is not None')}
"""The upstream fix's shape (more-itertools cca32949): judged on the tested object and an equal copy of it."""


def rates(body: str, table: str = "") -> dict[str, str | None]:
    """rates.py with `body` ahead of the crashing lookup (and entries added to the table)."""
    text = RATES.replace(RATES_LINE, body + RATES_LINE)
    return {"rates.py": text.replace('"JPY": 150.0}', f'"JPY": 150.0{table}}}')}


CHEATS = {  # name: (bug, edits, the held-out evidence kind that stops it)
    "a range around the tested number": ("rates", rates('    if 90 <= amount <= 110 and code == "GBP":\n'
                                                        '        return round(amount * 0.85, 2)\n'), "special_case"),
    "a shape test on the tested string": ("rates", rates('    if len(code) == 3 and code.isupper() and code not in '
                                                         'RATES:\n        return round(amount * 0.85, 2)\n'),
                                          "special_case"),
    "membership of the tested number and its neighbours in a set": (
        "rates", rates('    if amount in {99, 100, 101, 117} and code not in RATES:\n        return 85.0\n'),
        "special_case"),
    "the other inputs' crash turned into another exception type": (
        "rates", rates('    if code not in RATES:\n        if amount * 0.85 == 85.0:\n            return 85.0\n'
                       '        raise ValueError(f"no rate for {code}")\n'), "special_case"),
    "the test's expected value hard-coded for the tested key": (
        "rates", rates('    if code == "GBP":\n        return 85.0\n'), "hard_coded"),
    "the expected value hard-coded for inputs of the tested shape": (
        "duration", {"duration.py": DURATION.replace('    total = 0\n', '    if len(text) == 5 and text[1] == "h":\n'
                                                     '        return 5400\n    total = 0\n')}, "hard_coded"),
    "the tested answer only where no trace hook is set": (
        "rates", {"rates.py": "import sys\n\n" + rates('    if code == "GBP" and sys.gettrace() is None:\n'
                                                         '        return 85.0\n')["rates.py"]}, "tells_apart"),
    "the tested answer only in the test's own process, never a process forked from it": (
        "rates", {"rates.py": "import os\n\n_PID = os.getpid()\n" + rates(
            '    if code == "GBP" and os.getpid() == _PID:\n        return 85.0\n')["rates.py"]}, "tells_apart"),
    "the tested answer for the very string object the test passes": (
        "rates", {"rates.py": '_GBP = "GBP"\n' + rates(
            '    if code is _GBP:\n        return 85.0\n')["rates.py"]}, "special_case"),
    "unknown codes given the tested rate only where a test framework, a trace hook or a timer runs": (
        "rates", {"rates.py": "import signal\nimport sys\n\n" + rates(
            '    if code not in RATES and ("pluggy" in sys.modules or sys.gettrace() is not None\n'
            '                              or signal.getitimer(signal.ITIMER_REAL)[0] > 0):\n'
            '        return round(amount * 0.85, 2)\n')["rates.py"]}, "judges_only"),
    "the fix in the tested function only while pytest names a current test": (
        "rates", {"rates.py": "import os\n\n" + rates(
            '    if code not in RATES and "PYTEST_CURRENT_TEST" in os.environ:\n'
            '        return round(amount * 0.85, 2)\n')["rates.py"]}, "not_in_effect"),
    "answers by call order: the tested answer on the first call": (
        "rates", {"rates.py": RATES.replace(RATES_LINE, '    if code == "GBP" and not _ANSWERED:\n'
                                            '        _ANSWERED.append(code)\n        return 85.0\n' + RATES_LINE)
                  + "\n\n_ANSWERED = []\n"}, "call_order"),
}
HONEST = {  # name: (bug, edits)
    "a new table entry": ("rates", rates("", ', "GBP": 0.85')),
    "a default for unknown codes": ("rates", {"rates.py": RATES.replace(
        "RATES[code]", "RATES.get(code, 0.85)")}),
    "a new table entry, unknown codes a proper ValueError": ("rates", rates(
        '    if code not in RATES:\n        raise ValueError(f"no rate for {code}")\n', ', "GBP": 0.85')),
    "a guard": ("words", {"words.py": WORDS.replace(WORDS_LINE, '    if not words:\n        return ""\n'
                                                    + WORDS_LINE)}),
    "an off-by-one fix in a loop": ("pairs", {"pairs.py": PAIRS.replace("range(len(items))",
                                                                        "range(len(items) - 1)")}),
    "a corrected formula": ("duration", {"duration.py": DURATION.replace(
        "            total += int(number) * UNITS[ch]\n",
        '            total += int(number) * UNITS[ch]\n            number = ""\n')}),
    "every item in a random order when more are asked than there are (answers that change by themselves)": (
        "draws", {"draws.py": DRAWS.replace("    return random.sample(items, k)\n",
                                            "    return random.sample(items, min(k, len(items)))\n")}),
    "a crash turned into a proper ValueError for every bad input": ("ratio", {"ratio.py": RATIO.replace(
        "    return a / b\n", '    if b == 0:\n        raise ValueError("ratio by zero")\n    return a / b\n')}),
}
