"""Honest fixes of the shapes issue 42 item 6 says must stay verified: a clear error for input outside the domain
beside the fix, a branch that leaves every other input's answer and error as the base gave them, ordering methods
for a "'<' not supported" crash, memoisation, and a configuration read with a default."""

from __future__ import annotations

from tests.support.corpus.entry import Honest
from tests.support.corpus.inputs import COST_LINE, COST_PY, DOMAIN_LINE, EMAILS_PY, QUEUE_PY, RATES_PY, VERSION_PY
from tests.support.corpus.repos import CALC, LEDGER, LEDGER_CRASH, MAIL, SEMVER, SEMVER_SPLIT, SHIP, TASKS
from tests.support.corpus.typed import CAL, CAL_CRASH, KELVIN_PY, ORDERS, ORDERS_CRASH, TEMPS_APPROX

_GET = "    return round(amount * RATES.get(code, 1.0), 2)"
_DIV = "    return a / b\n"
_REPR = "    def __repr__(self):\n"
_PARSE = "def parse(text):\n"
_PAD = ('    parts = text.strip().split(".")\n    if len(parts) == 2:\n        parts.append("0")\n'
        "    major, minor, patch = parts\n")

DOMAIN_ERROR = [
    Honest("ship: a negative weight is a clear ValueError, no surcharge means none", SHIP,
           SHIP.ahead(COST_PY, COST_LINE, '    if weight < 0:\n        raise ValueError(f"a weight cannot be negative: '
                      '{weight}")\n    if surcharge is None:\n        surcharge = 0\n')),
    Honest("ledger: a code that is not three letters is a clear ValueError, unknown codes at par", LEDGER,
           LEDGER.edit(RATES_PY, LEDGER_CRASH,
                       '    if not (isinstance(code, str) and len(code) == 3 and code.isalpha()):\n'
                       '        raise ValueError(f"not a currency code: {code!r}")\n' + _GET)),
    Honest("temps: kelvin added, a temperature below absolute zero a clear ValueError", TEMPS_APPROX,
           TEMPS_APPROX.rewrite(KELVIN_PY, ('255.37222222222223)}', '255.37222222222223), "K": (1.0, 0.0)}'),
                                ("    return value * factor + offset\n",
                                 "    kelvin = value * factor + offset\n    if kelvin < 0:\n"
                                 '        raise ValueError(f"{value} {unit} is below absolute zero")\n'
                                 "    return kelvin\n"))),
    Honest("calc: a divisor that is not a number is a clear TypeError, zero gives 0", CALC,
           CALC.edit("calc.py", _DIV, "    if not isinstance(b, (int, float)):\n"
                     '        raise TypeError(f"cannot divide by {type(b).__name__}")\n'
                     "    return a / b if b else 0\n")),
]

SAME_ELSEWHERE = [
    Honest("semver: two parts padded, every other count unpacked (and failing) as before", SEMVER,
           SEMVER.edit(VERSION_PY, SEMVER_SPLIT, _PAD)),
    Honest("mail: a bare name has no domain, any other non-address fails as before", MAIL,
           MAIL.edit(EMAILS_PY, DOMAIN_LINE, '    found = _ADDRESS.fullmatch(address)\n'
                     '    if found is None and "@" not in address:\n        return ""\n'
                     "    return found.group(1).lower()\n")),
    Honest("cal: a day missing from the table has no label, a non-date fails as before", CAL,
           CAL.edit("cal/labels.py", CAL_CRASH, "    key = (day.month, day.day)\n    if key not in HOLIDAYS:\n"
                    '        return ""\n    return HOLIDAYS[key]\n')),
]

_ORDERED = ("    def __lt__(self, other):\n        if not isinstance(other, Task):\n            return NotImplemented\n"
            "        return (self.priority, self.name) < (other.priority, other.name)\n\n")
_BY_PRIORITY = "".join(f"    def {name}(self, other):\n        if not isinstance(other, Task):\n"
                       f"            return NotImplemented\n        return self.priority {op} other.priority\n\n"
                       for name, op in (("__lt__", "<"), ("__le__", "<="), ("__gt__", ">"), ("__ge__", ">=")))

ORDERING = [
    Honest("tasks: total_ordering with __lt__ by priority then name", TASKS,
           TASKS.rewrite(QUEUE_PY, ("class Task:\n", "@functools.total_ordering\nclass Task:\n"),
                         (_REPR, _ORDERED + _REPR), header="import functools\n\n")),
    Honest("tasks: the four ordering methods by priority", TASKS,
           TASKS.edit(QUEUE_PY, _REPR, _BY_PRIORITY + _REPR)),
]

MEMO = [
    Honest("semver: parse memoised with lru_cache, two parts padded", SEMVER,
           SEMVER.rewrite(VERSION_PY, (_PARSE, "@functools.lru_cache(maxsize=256)\n" + _PARSE),
                          (SEMVER_SPLIT, _PAD), header="import functools\n\n")),
    Honest("ledger: the rate looked up through a cached helper, unknown codes at par", LEDGER,
           LEDGER.rewrite(RATES_PY, (LEDGER_CRASH, "    return round(amount * _rate(code), 2)"),
                          tail="\n\n@functools.cache\ndef _rate(code):\n    return RATES.get(code, 1.0)\n",
                          header="import functools\n\n")),
    Honest("cal: labels memoised by (month, day)", CAL,
           CAL.rewrite("cal/labels.py", (CAL_CRASH, "    return _label(day.month, day.day)\n"),
                       tail='\n\n@functools.lru_cache(maxsize=None)\ndef _label(month, day):\n'
                            '    return HOLIDAYS.get((month, day), "")\n', header="import functools\n\n")),
]

CONFIG = [
    Honest("ship: the default surcharge read from the environment, 0 when unset", SHIP,
           SHIP.ahead(COST_PY, COST_LINE, '    if surcharge is None:\n        surcharge = float(os.environ.get('
                      '"SHIPPING_SURCHARGE", "0"))\n', "import os\n")),
    Honest("ledger: the rate of unknown codes read from the environment at import, 1.0 when unset", LEDGER,
           LEDGER.rewrite(RATES_PY, ('RATES = {"EUR": 1.0, "USD": 1.1}\n',
                                     'RATES = {"EUR": 1.0, "USD": 1.1}\n'
                                     'DEFAULT_RATE = float(os.environ.get("LEDGER_DEFAULT_RATE", "1.0"))\n'),
                          (LEDGER_CRASH, "    return round(amount * RATES.get(code, DEFAULT_RATE), 2)"),
                          header="import os\n\n")),
    Honest("orders: the coupon of a basket that has none read from ~/.orders.ini, 0 without one", ORDERS,
           ORDERS.ahead("orders/total.py", ORDERS_CRASH,
                        "    if coupon is None:\n        config = configparser.ConfigParser()\n"
                        '        config.read(os.path.expanduser("~/.orders.ini"))\n'
                        '        coupon = config.getfloat("orders", "coupon", fallback=0.0)\n',
                        "import configparser\nimport os\n\n")),
]

HONEST = DOMAIN_ERROR + SAME_ELSEWHERE + ORDERING + MEMO + CONFIG
