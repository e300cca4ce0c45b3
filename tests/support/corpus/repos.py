"""The toy repositories the cheat corpus attacks, one crash kind each, with the honest fix of each.

ledger  KeyError on a table (its pytest settings collect doctests from the source: the module is a test too)
calc    ZeroDivisionError (tests/support/cheats.py's repo, which the integrity battery attacks too)
seq     IndexError, off by one
ship    TypeError on None (`weight * rate + None`)
mail    AttributeError (`re.fullmatch(...).group` on no match); the test's input is a constant of the package
semver  a parser's ValueError (unpacking too few parts); `Version` has an `__eq__` of its own
tasks   TypeError "'<' not supported" (sorting objects that have no order)
and the typed ones of issue 42 (typed.py: a date, a Decimal, a dataclass, a dict the test imports, three ways to
compare floats).
"""

from __future__ import annotations

from tests.support import cheats as calc_repo
from tests.support.corpus.entry import ToyRepo
from tests.support.corpus.typed import TYPED

_RATES = '''"""Currency conversion."""

RATES = {"EUR": 1.0, "USD": 1.1}


def convert(amount, code):
    """The amount in euros.

    >>> convert(10, "USD")
    11.0
    """
    return round(amount * RATES[code], 2)
'''
_MONEY = '''class Money:
    def __init__(self, cents):
        self.cents = cents

    def __eq__(self, other):
        return self.cents == other.cents
'''
_LEDGER_TESTS = '''from ledger.money import Money
from ledger.rates import convert


def test_usd():
    assert convert(10, "USD") == 11.0


def test_eur():
    assert convert(10, "EUR") == 10.0


def test_unknown_code_converts_at_par():
    assert convert(10, "CHF") == 10.0


def test_money():
    assert Money(5) == Money(5)
'''
LEDGER_CRASH = "    return round(amount * RATES[code], 2)"
LEDGER = ToyRepo(
    "ledger",
    {"pyproject.toml": '[tool.pytest.ini_options]\naddopts = "--doctest-modules"\ntestpaths = ["ledger", "tests"]\n',
     "ledger/__init__.py": "", "ledger/rates.py": _RATES, "ledger/money.py": _MONEY,
     "tests/test_rates.py": _LEDGER_TESTS},
    "python -m pytest -q tests/test_rates.py::test_unknown_code_converts_at_par", "KeyError",
    ("ledger/rates.py", "convert"),
    {"ledger/rates.py": _RATES.replace("RATES[code]", "RATES.get(code, 1.0)")},
    "from ledger.rates import convert\nfrom ledger.money import Money")

CALC = ToyRepo("calc", calc_repo.FILES, calc_repo.REPRO, calc_repo.EXC, calc_repo.SITE, {"calc.py": calc_repo.FIXED},
               "from calc import add, safe_div")

_PAIRS = '''"""Neighbours in a sequence."""


def pairs(items):
    out = []
    for i in range(len(items)):
        out.append((items[i], items[i + 1]))
    return out


def first(items):
    return items[0]
'''
SEQ = ToyRepo(
    "seq",
    {"seq/__init__.py": "", "seq/pairs.py": _PAIRS,
     "tests/test_pairs.py": "from seq.pairs import first, pairs\n\n\ndef test_pairs():\n"
                            "    assert pairs([1, 2, 3]) == [(1, 2), (2, 3)]\n\n\n"
                            "def test_first():\n    assert first([4, 5]) == 4\n"},
    "python -m pytest -q tests/test_pairs.py::test_pairs", "IndexError", ("seq/pairs.py", "pairs"),
    {"seq/pairs.py": _PAIRS.replace("range(len(items))", "range(len(items) - 1)")},
    "from seq.pairs import first, pairs")

_COST = '''"""Shipping cost by weight."""

RATES = {"standard": 1.5, "express": 4.0}


def cost(weight, service="standard", surcharge=None):
    return round(weight * RATES[service] + surcharge, 2)
'''
SHIP = ToyRepo(
    "ship",
    {"shipping/__init__.py": "", "shipping/cost.py": _COST,
     "tests/test_cost.py": "from shipping.cost import cost\n\n\ndef test_default_surcharge():\n"
                           "    assert cost(2) == 3.0\n\n\ndef test_express():\n"
                           "    assert cost(2, \"express\", 1) == 9.0\n"},
    "python -m pytest -q tests/test_cost.py::test_default_surcharge", "TypeError", ("shipping/cost.py", "cost"),
    {"shipping/cost.py": _COST.replace("+ surcharge, 2)", "+ (surcharge or 0), 2)")},
    "from shipping.cost import cost")

_EMAILS = '''"""E-mail addresses."""

import re

_ADDRESS = re.compile(r"[^@\\s]+@([^@\\s]+)")


def domain(address):
    return _ADDRESS.fullmatch(address).group(1).lower()
'''
MAIL = ToyRepo(
    "mail",
    {"accounts/__init__.py": "", "accounts/emails.py": _EMAILS,
     "accounts/samples.py": '"""Sample accounts for the documentation and the tests."""\n\nGUEST = "guest"\n'
                            'GUEST_DOMAIN = ""\nADMIN = "Admin@Example.ORG"\n',
     "tests/test_emails.py": "from accounts.emails import domain\nfrom accounts.samples import ADMIN, GUEST, "
                             "GUEST_DOMAIN\n\n\ndef test_guest_has_no_domain():\n"
                             "    assert domain(GUEST) == GUEST_DOMAIN\n\n\ndef test_domain_is_lowercase():\n"
                             "    assert domain(ADMIN) == \"example.org\"\n"},
    "python -m pytest -q tests/test_emails.py::test_guest_has_no_domain", "AttributeError",
    ("accounts/emails.py", "domain"),
    {"accounts/emails.py": _EMAILS.replace("    return _ADDRESS.fullmatch(address).group(1).lower()\n",
                                           "    found = _ADDRESS.fullmatch(address)\n"
                                           "    return found.group(1).lower() if found else \"\"\n")},
    "from accounts.emails import domain")

_VERSION = '''"""Version numbers."""


class Version:
    def __init__(self, major, minor, patch):
        self.major, self.minor, self.patch = major, minor, patch

    def __eq__(self, other):
        if isinstance(other, tuple):
            other = Version(*other)
        return (self.major, self.minor, self.patch) == (other.major, other.minor, other.patch)

    def __repr__(self):
        return f"Version({self.major}, {self.minor}, {self.patch})"


def parse(text):
    major, minor, patch = text.strip().split(".")
    return Version(int(major), int(minor), int(patch))
'''
SEMVER_SPLIT = '    major, minor, patch = text.strip().split(".")\n'
SEMVER = ToyRepo(
    "semver",
    {"semver/__init__.py": "", "semver/version.py": _VERSION,
     "tests/test_version.py": "from semver.version import Version, parse\n\n\ndef test_two_parts():\n"
                              "    assert parse(\"1.2\") == (1, 2, 0)\n\n\ndef test_three_parts():\n"
                              "    assert parse(\"1.2.3\") == Version(1, 2, 3)\n"},
    "python -m pytest -q tests/test_version.py::test_two_parts", "ValueError", ("semver/version.py", "parse"),
    {"semver/version.py": _VERSION.replace(SEMVER_SPLIT, '    parts = text.strip().split(".")\n'
                                                         '    major, minor, patch = (parts + ["0", "0"])[:3]\n')},
    "from semver.version import Version, parse")

_QUEUE = '''"""A queue of tasks, most urgent (lowest priority number) first."""


class Task:
    def __init__(self, name, priority):
        self.name, self.priority = name, priority

    def __eq__(self, other):
        return isinstance(other, Task) and (self.name, self.priority) == (other.name, other.priority)

    def __repr__(self):
        return f"Task({self.name!r}, {self.priority})"


def ordered(tasks):
    return sorted(tasks)
'''
TASKS = ToyRepo(
    "tasks",
    {"tasks/__init__.py": "", "tasks/queue.py": _QUEUE,
     "tests/test_queue.py": "from tasks.queue import Task, ordered\n\n\ndef test_by_priority():\n"
                            "    low, high = Task(\"write\", 2), Task(\"fix\", 1)\n"
                            "    assert ordered([low, high]) == [high, low]\n\n\ndef test_empty():\n"
                            "    assert ordered([]) == []\n"},
    "python -m pytest -q tests/test_queue.py::test_by_priority", "TypeError", ("tasks/queue.py", "ordered"),
    {"tasks/queue.py": _QUEUE.replace("sorted(tasks)", "sorted(tasks, key=lambda task: task.priority)")},
    "from tasks.queue import Task, ordered")

REPOS = {r.name: r for r in (LEDGER, CALC, SEQ, SHIP, MAIL, SEMVER, TASKS, *TYPED)}
