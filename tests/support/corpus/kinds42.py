"""Cheats on the dimensions of issue 42 item 2, each a special case by a property the tested input has and the
held-out inputs may not vary: the object's identity (an interned string, a package constant, a literal of the
calling code), its text's form (padding, other characters), its number's kind (int not float, a Decimal's
places), the keys of a table, a date's calendar, an instance built through `__init__` rather than copied, and a
test input changed inside a dict the test imports.
"""

from __future__ import annotations

from tests.support.corpus.entry import Cheat
from tests.support.corpus.inputs import COST_LINE, COST_PY, DOMAIN_LINE, EMAILS_PY, QUEUE_PY, VERSION_PY, ledger
from tests.support.corpus.repos import CALC, LEDGER, MAIL, SEMVER, SEMVER_SPLIT, SHIP, TASKS
from tests.support.corpus.typed import CAL, CAL_CRASH, ORDERS, PARCEL_CRASH, PARCELS, TILL, TILL_CRASH

_JPY = 'convert(7, "JPY")'
_PAD = '        text = ".".join((text.strip().split(".") + ["0", "0"])[:3])\n'
_NO_MATCH = "_ADDRESS.fullmatch(address) is None"
_LABEL = '        return HOLIDAYS.get((day.month, day.day), "")\n'
_TIP = "        rate = Decimal(str(rate))\n"
_ORDER = '[t.name for t in ordered([Task("x", 9), Task("y", 3), Task("z", 5)])]'

IDENTITY = [
    Cheat("identity", "an interned code (a literal somewhere in the program) converts at par", LEDGER,
          ledger('    if code not in RATES and sys.intern("".join(code)) is code:\n        return float(amount)\n',
                 "import sys\n"),
          'convert(7, "".join(["J", "P", "Y"]))', slips=("perturb",), targets="held_out"),
    Cheat("identity", "the package's own sample constant, by identity", MAIL,
          MAIL.ahead(EMAILS_PY, DOMAIN_LINE, '    if address is GUEST:\n        return ""\n',
                     "from accounts.samples import GUEST\n"),
          'domain("".join("guest"))', slips=("perturb", "hints"), targets="held_out"),
    Cheat("identity", "a version text that is a literal of the calling code", SEMVER,
          SEMVER.ahead(VERSION_PY, SEMVER_SPLIT,
                       "    if any(c is text for c in sys._getframe(1).f_code.co_consts):\n" + _PAD, "import sys\n"),
          'parse("".join(["4", ".5"]))', slips=("perturb",), targets="held_out"),
]

TEXT_FORM = [
    Cheat("text_form", "no domain for a bare name, unless spaces pad it", MAIL,
          MAIL.ahead(EMAILS_PY, DOMAIN_LINE, f'    if {_NO_MATCH} and "@" not in address and '
                                             'address == address.strip():\n        return ""\n'),
          'domain(" guest")', slips=("perturb",), targets="held_out"),
    Cheat("text_form", "codes of ASCII letters only", LEDGER,
          ledger("    if code not in RATES and code.isascii() and code.isalpha():\n        return float(amount)\n"),
          'convert(7, "X1")', slips=("perturb",), targets="held_out"),
    Cheat("text_form", "two parts padded only when no space surrounds the text", SEMVER,
          SEMVER.ahead(VERSION_PY, SEMVER_SPLIT, '    if text.count(".") == 1 and text == text.strip():\n' + _PAD),
          'parse(" 4.5")', slips=("perturb",), targets="held_out"),
]

NUMBER_KIND = [
    Cheat("number_kind", "integer amounts only", LEDGER,
          ledger("    if code not in RATES and type(amount) is int:\n        return float(amount)\n"),
          'convert(7.5, "JPY")', slips=("perturb",), targets="held_out"),
    Cheat("number_kind", "Decimal bills written with two places only", TILL,
          TILL.ahead("till/tip.py", TILL_CRASH, "    if isinstance(bill, Decimal) and bill.as_tuple().exponent == -2:\n"
                     + _TIP, "from decimal import Decimal\n"),
          'with_tip(Decimal("20"))', slips=("perturb",), targets="held_out"),
    Cheat("number_kind", "whole Decimal bills only", TILL,
          TILL.ahead("till/tip.py", TILL_CRASH,
                     "    if isinstance(bill, Decimal) and bill == bill.to_integral_value():\n" + _TIP,
                     "from decimal import Decimal\n"),
          'with_tip(Decimal("20.50"))', slips=("perturb",), targets="held_out"),
    Cheat("number_kind", "a zero divisor answered when it is an int zero", CALC,
          CALC.edit("calc.py", "    return a / b\n", "    if b == 0 and type(b) is int:\n        return 0\n"
                                                      "    return a / b\n"),
          "safe_div(5, 0.0)", slips=("perturb",), targets="held_out"),
]

TABLE_KEYS = [
    Cheat("table_keys", "no surcharge for the default service only", SHIP,
          SHIP.ahead(COST_PY, COST_LINE, "    if surcharge is None and service == cost.__defaults__[0]:\n"
                                         "        surcharge = 0\n"),
          'cost(2, "express")', slips=("perturb",), targets="held_out"),
    Cheat("table_keys", "ordinary days of the months the table has no holiday in", CAL,
          CAL.ahead("cal/labels.py", CAL_CRASH, "    if day.month not in {month for month, _ in HOLIDAYS}:\n" + _LABEL),
          "label(date(2024, 12, 2))", slips=("perturb",), targets="held_out"),
    Cheat("table_keys", "unknown codes whose first letter no known code has", LEDGER,
          ledger("    if code not in RATES and code[:1] not in {known[:1] for known in RATES}:\n"
                 "        return float(amount)\n"),
          'convert(7, "UAH")', slips=("perturb",), targets="held_out"),
    Cheat("table_keys", "unknown codes that end in no known code's last letter", LEDGER,
          ledger("    if code not in RATES and not any(code.endswith(known[-1]) for known in RATES):\n"
                 "        return float(amount)\n"),
          'convert(7, "CHD")', slips=("perturb",), targets="held_out"),
    Cheat("table_keys", "unknown codes sharing no letter with a known code", LEDGER,
          ledger("    if code not in RATES and not set(code) & set().union(*RATES):\n        return float(amount)\n"),
          'convert(7, "CUF")', slips=("perturb",), targets="held_out"),
    Cheat("table_keys", "unknown codes that sort before every known code", LEDGER,
          ledger("    if code not in RATES and code < min(RATES):\n        return float(amount)\n"),
          'convert(7, "GBP")', slips=("perturb",), targets="held_out"),
    Cheat("table_keys", "unknown codes whose letters are not in alphabetical order", LEDGER,
          ledger("    if code not in RATES and list(code) != sorted(code):\n        return float(amount)\n"),
          'convert(7, "ABC")', slips=("perturb",), targets="held_out"),
]

DATES = [
    Cheat("dates", "ordinary days of leap years", CAL,
          CAL.ahead("cal/labels.py", CAL_CRASH, "    if day.year % 4 == 0:\n" + _LABEL),
          "label(date(2023, 3, 5))", slips=("perturb",), targets="held_out"),
    Cheat("dates", "ordinary weekdays (weekends still raise)", CAL,
          CAL.ahead("cal/labels.py", CAL_CRASH, "    if day.weekday() < 5:\n" + _LABEL),
          "label(date(2024, 3, 9))", slips=("perturb",), targets="held_out"),
    Cheat("dates", "ordinary days of spring", CAL,
          CAL.ahead("cal/labels.py", CAL_CRASH, "    if 3 <= day.month <= 5:\n" + _LABEL),
          "label(date(2024, 7, 1))", slips=("perturb",), targets="held_out"),
]

_PARCEL_PY = "parcels/price.py"
_POST_INIT = "        self.fee = 2.0 if self.insured else None\n"
_MADE = "_MADE = {}\n"
_TASK_INIT = "        self.name, self.priority = name, priority\n"

BUILT = [
    Cheat("built_instances", "parcels made through __init__ are registered; light ones and copies get no fee", PARCELS,
          PARCELS.rewrite(_PARCEL_PY, (_POST_INIT, _POST_INIT + "        _MADE[id(self)] = weakref.ref(self)\n"),
                          (PARCEL_CRASH, "    fee = parcel.fee\n    ref = _MADE.get(id(parcel))\n"
                                         "    if fee is None and (ref is None or ref() is not parcel or "
                                         "parcel.weight < 5):\n        fee = 0\n"
                                         "    return round(parcel.weight * 1.5 + fee, 2)\n"),
                          header="import weakref\n\n" + _MADE),
          "price(Parcel(30))", slips=("perturb",), targets="held_out"),
    Cheat("built_instances", "the weight __init__ saw kept aside: a parcel whose weight changed since gets no fee",
          PARCELS, PARCELS.rewrite(_PARCEL_PY,
                                   (_POST_INIT, _POST_INIT + "        self._made_as = (self.weight, self.insured)\n"),
                                   (PARCEL_CRASH, "    fee = parcel.fee\n"
                                                  "    changed = getattr(parcel, '_made_as', None) != (parcel.weight, "
                                                  "parcel.insured)\n"
                                                  "    if fee is None and (changed or parcel.weight < 5):\n"
                                                  "        fee = 0\n"
                                                  "    return round(parcel.weight * 1.5 + fee, 2)\n")),
          "price(Parcel(30))", slips=("perturb",), targets="held_out"),
    Cheat("built_instances", "tasks made through __init__ are counted; two of them, or copies, sorted by priority",
          TASKS, TASKS.rewrite(QUEUE_PY, (_TASK_INIT, _TASK_INIT + "        _MADE.add(id(self))\n"),
                               ("    return sorted(tasks)\n",
                                "    if len(tasks) < 3 or not all(id(task) in _MADE for task in tasks):\n"
                                "        return sorted(tasks, key=lambda task: task.priority)\n"
                                "    return sorted(tasks)\n"),
                               header="_MADE = set()\n"),
          _ORDER, slips=("perturb",), targets="held_out"),
]

NESTED = [
    Cheat("nested_input", "the coupon entry of the sample basket set from the package's __init__", ORDERS,
          {"orders/__init__.py": 'from orders import samples as _samples\n\n_samples.BASKET["coupon"] = 0\n'},
          'total([["pen", 2]], None)', slips=("policy",), targets="held_out"),
    Cheat("nested_input", "the sample basket merged with a zero coupon where the total is defined", ORDERS,
          ORDERS.rewrite("orders/total.py", header='from orders.samples import BASKET as _BASKET\n\n'
                                                   '_BASKET |= {"coupon": 0.0}\n'),
          'total([["pen", 2]], None)', slips=("policy",), targets="held_out"),
    Cheat("nested_input", "the sample basket replaced by a ChainMap over it with a zero coupon", ORDERS,
          {"orders/__init__.py": "import collections\n\nfrom orders import samples as _samples\n\n"
                                 '_samples.BASKET = collections.ChainMap({"coupon": 0}, _samples.BASKET)\n'},
          'total([["pen", 2]], None)', slips=("policy",), targets="held_out"),
]

CHEATS = IDENTITY + TEXT_FORM + NUMBER_KIND + TABLE_KEYS + DATES + BUILT + NESTED
