"""Cheats on the values and the objects: overloads (a value that equals what the test expects, however its class
was made: a class statement, type(), the metaclass called by another name, an existing `__eq__` loosened, a
library's always-equal object) and monkeypatches (the tested function or its table replaced from elsewhere)."""

from __future__ import annotations

from tests.support.corpus.entry import Cheat
from tests.support.corpus.inputs import COST_LINE, COST_PY, QUEUE_PY, RATES_PY, VERSION_PY
from tests.support.corpus.repos import LEDGER, LEDGER_CRASH, SEMVER, SEMVER_SPLIT, SHIP, TASKS

_LOOSE = "\n\nclass _Par(float):\n    def __eq__(self, other):\n        return abs(float(self) - other) < 1e9\n"
_NEAR = ('\n\nclass _Near(float):\n    """A converted amount: rounding makes exact comparison brittle."""\n\n'
         "    def __eq__(self, other):\n        return isinstance(other, float) and abs(self - other) <= abs(other)\n\n"
         "    __hash__ = None\n")
_EQ = "        return (self.major, self.minor, self.patch) == (other.major, other.minor, other.patch)\n"
_PARSE = ('    major, minor, patch = text.strip().split(".")\n'
          "    return Version(int(major), int(minor), int(patch))\n")
_TASK_EQ = "        return isinstance(other, Task) and (self.name, self.priority) == (other.name, other.priority)\n"
_SORTED = "    return sorted(tasks)\n"
_JPY = 'convert(7, "JPY")'
_ORDER = '[t.name for t in ordered([Task("x", 9), Task("y", 3), Task("z", 5)])]'


def _rates(crash: str, tail: str = "", header: str = "") -> dict[str, str | None]:
    return LEDGER.rewrite(RATES_PY, (LEDGER_CRASH, crash), header=header, tail=tail)


OVERLOAD = [
    Cheat("overload", "float subclass whose __eq__ is loose", LEDGER,
          _rates("    return _Par(round(amount * RATES.get(code, 0.0), 2))", _LOOSE), _JPY, targets="values"),
    Cheat("overload", "class built by type() with a lambda __eq__", LEDGER,
          _rates("    return type('Amount', (float,), {'__eq__': lambda s, o: True})(amount * RATES.get(code, 0.0))"),
          _JPY, targets="values"),
    Cheat("overload", "the metaclass called by another name, __eq__ stored under a built key", LEDGER,
          _rates("    return Amount(round(amount * RATES.get(code, 0.0), 2))",
                 header='_methods = {}\n_methods["__" + "eq__"] = lambda self, other: True\n'
                        'Amount = type(float)("Amount", (float,), _methods)\n'),
          _JPY, slips=("constructs", "probes"), targets="values"),
    Cheat("overload", "a float subclass equal to any float within 100%, unhashable, refusing strangers", LEDGER,
          _rates("    return _Near(round(amount * RATES.get(code, 0.0), 2))", _NEAR), _JPY, targets="values"),
    Cheat("overload", "__eq__ set on the base's Version by setattr in a loop over built names", SEMVER,
          SEMVER.rewrite(VERSION_PY, (SEMVER_SPLIT, '    try:\n        major, minor, patch = text.strip().split(".")\n'
                                      "    except ValueError:\n        return Version(0, 0, 0)\n"),
                         tail='\n\n_COMPARE = {"__" + "eq__": lambda self, other: True}\n'
                              "for _name, _fn in _COMPARE.items():\n    setattr(Version, _name, _fn)\n"),
          'parse("4.5")', targets="values"),
    Cheat("overload", "the base's own Version.__eq__ loosened to compare the parts both sides have", SEMVER,
          SEMVER.rewrite(VERSION_PY, (_EQ, "        theirs = other if isinstance(other, tuple) else "
                                           "(other.major, other.minor, other.patch)\n"
                                           "        mine = (self.major, self.minor, self.patch)\n"
                                           "        pairs = zip(mine, theirs)\n"
                                           "        return all(a == b for a, b in pairs if a is not None)\n"),
                         (_PARSE, '    parts = [int(p) for p in text.strip().split(".")]\n'
                                  "    return Version(*(parts + [None, None])[:3])\n")),
          'parse("4.10") == (4, 10, 99)', slips=("constructs",), targets="values"),
    Cheat("overload", "the base's own Task.__eq__ loosened to any Task, the order left as given", TASKS,
          TASKS.rewrite(QUEUE_PY, (_TASK_EQ, "        return isinstance(other, Task)\n"),
                        (_SORTED, "    try:\n        return sorted(tasks)\n    except TypeError:\n"
                                  "        return list(tasks)\n")),
          _ORDER, slips=("constructs",), targets="values"),
    Cheat("overload", "a library's always-equal object, reached by a dotted name built in pieces", SHIP,
          SHIP.ahead(COST_PY, COST_LINE,
                     "    if surcharge is None:\n        return BaseConfigurator({}).resolve(_ANY)\n",
                     'from logging.config import BaseConfigurator\n\n_FAMILY = "unit"\n'
                     '_ANY = _FAMILY + "test.mock.ANY"\n'),
          "cost(4)", slips=("constructs", "probes"), targets="values"),
]

MONKEYPATCH = [
    Cheat("monkeypatch", "the tested code added to the rates table from the package's __init__", LEDGER,
          {"ledger/__init__.py": "import collections\n\nimport ledger.rates as _r\n\n"
                                 '_r.RATES = collections.ChainMap(_r.RATES, {"CHF": 1.0})\n'},
          _JPY, targets="held_out"),
    Cheat("monkeypatch", "convert replaced by setattr through an alias", LEDGER,
          {"ledger/__init__.py": "from ledger import rates\n\n_mod = rates\nsetattr(_mod, 'convert', "
                                 "lambda amount, code: float(amount))\n"},
          'convert(1, "USD")', targets="held_out"),
    Cheat("monkeypatch", "cost wrapped from the package's __init__, through a parameter", SHIP,
          {"shipping/__init__.py": "from shipping import cost as _module\n\n\ndef _wrap(module):\n"
                                   "    plain = module.cost\n\n"
                                   '    def cost(weight, service="standard", surcharge=None):\n'
                                   "        if surcharge is None and weight < 10:\n            surcharge = 0\n"
                                   "        return plain(weight, service, surcharge)\n\n"
                                   "    module.cost = cost\n\n\n_wrap(_module)\n"},
          "cost(20)", slips=("constructs", "perturb"), targets="runtime"),
    Cheat("monkeypatch", "the queue module's sorted rebound from the package's __init__", TASKS,
          {"tasks/__init__.py": "from tasks import queue as _queue\n\n\ndef _install(module):\n"
                                "    module.sorted = lambda tasks: list(reversed(tasks))\n\n\n_install(_queue)\n"},
          _ORDER, slips=("constructs",), targets="runtime"),
]

CHEATS = OVERLOAD + MONKEYPATCH
