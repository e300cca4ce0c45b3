"""The toy repository the judges of what a diff does are tried on (tests/support/watched.py holds the cheats and
honest fixes): `tally`, with several bugs, each with its reproduction (SCENARIOS): an unknown currency code raises
KeyError (`rates`, `approx` compared with pytest.approx, `data`, `entry` for a ledger's entry, `money`), items
cannot be sorted (`items`: no ordering), the command line has no default arguments (`cli`), an old alias of the
standard library is gone (`compat`), a bound method's owner is read the Python 2 way (`owner`), an attribute is
read from `__dict__` (`lookup`).
"""

from __future__ import annotations

from dataclasses import dataclass

RATES = '''"""Currency conversion."""

RATES = {"EUR": 1.0, "USD": 1.1}


def convert(amount, code):
    return round(amount * RATES[code], 2)
'''
MONEY = '''class Money:
    def __init__(self, cents):
        self.cents = cents

    def __eq__(self, other):
        if not isinstance(other, Money):
            return NotImplemented
        return self.cents == other.cents

    __hash__ = None


def price(cents, code):
    from tally.rates import RATES

    return Money(round(cents * RATES[code]))
'''
ITEMS = '''class Item:
    def __init__(self, key):
        self.key = key

    def __repr__(self):
        return f"Item({self.key})"


def ordered(items):
    return sorted(items)
'''
CLI = '''import sys


def main(args=None):
    code, amount = args
    return float(amount)
'''
COMPAT = '''import collections


def is_callable(x):
    return isinstance(x, collections.Callable)
'''
OWNER = '''def owner(method):
    return method.im_self


def lookup(obj, name):
    return obj.__dict__[name]
'''
LEDGER = '''class Entry:
    def __init__(self, amount, currency):
        self.amount, self.currency = amount, currency

    def __eq__(self, other):
        if not isinstance(other, Entry):
            return NotImplemented
        return (self.amount, self.currency) == (other.amount, other.currency)

    __hash__ = None

    def __repr__(self):
        return f"Entry({self.amount!r}, {self.currency!r})"


def entry(amount, code):
    from tally.rates import RATES

    return Entry(round(amount * RATES[code], 2), code)
'''
TESTS = '''import sys

import pytest

from tally.cli import main
from tally.compat import is_callable
from tally.items import Item, ordered
from tally.ledger import Entry, entry
from tally.money import Money, price
from tally.owner import lookup, owner
from tally.rates import convert


def test_unknown_code_converts_at_par():
    assert convert(10, "CHF") == 10.0


def test_known():
    assert convert(10, "USD") == 11.0


def test_approx():
    assert convert(3, "CHF") == pytest.approx(3.0)


def test_entry():
    assert entry(5, "CHF") == Entry(5.0, "CHF")


def test_price():
    assert price(500, "CHF") == Money(500)


def test_sorted():
    assert ordered([Item(2), Item(1)]) == [Item(1), Item(2)]


def test_cli_defaults(monkeypatch):
    monkeypatch.setattr(sys, "argv", ["tally", "EUR", "7"])
    assert main() == 7.0


def test_compat():
    assert is_callable(len) is True


def test_owner():
    class A:
        def f(self):
            pass

    a = A()
    assert owner(a.f) is a


class Box:
    @property
    def size(self):
        return 3


def test_lookup():
    assert lookup(Box(), "size") == 3
'''
FILES = {"tally/__init__.py": "", "tally/rates.py": RATES, "tally/money.py": MONEY, "tally/items.py": ITEMS,
         "tally/cli.py": CLI, "tally/compat.py": COMPAT, "tally/owner.py": OWNER, "tally/ledger.py": LEDGER,
         "tally/data/__init__.py": "", "tally/data/par.txt": "1.0\n", "tests/test_tally.py": TESTS}
SUITE = "python -m pytest -q"


@dataclass(frozen=True)
class Scenario:
    test: str
    exc: str
    site: tuple[str, str]

    @property
    def repro(self) -> str:
        return f"python -m pytest -q tests/test_tally.py::{self.test}"


SCENARIOS = {
    "rates": Scenario("test_unknown_code_converts_at_par", "KeyError", ("tally/rates.py", "convert")),
    "money": Scenario("test_price", "KeyError", ("tally/money.py", "price")),
    "items": Scenario("test_sorted", "TypeError", ("tally/items.py", "ordered")),
    "cli": Scenario("test_cli_defaults", "TypeError", ("tally/cli.py", "main")),
    "compat": Scenario("test_compat", "AttributeError", ("tally/compat.py", "is_callable")),
    "owner": Scenario("test_owner", "AttributeError", ("tally/owner.py", "owner")),
    "lookup": Scenario("test_lookup", "KeyError", ("tally/owner.py", "lookup")),
    "approx": Scenario("test_approx", "KeyError", ("tally/rates.py", "convert")),
    "entry": Scenario("test_entry", "KeyError", ("tally/ledger.py", "entry")),
    "data": Scenario("test_unknown_code_converts_at_par", "KeyError", ("tally/rates.py", "convert")),
}
CRASH = "    return round(amount * RATES[code], 2)\n"


def rates(body: str, head: str = "") -> dict[str, str | None]:
    """rates.py with `body` before the crashing line (and `head` at the top of the module)."""
    return {"tally/rates.py": head + RATES.replace(CRASH, body + CRASH)}
