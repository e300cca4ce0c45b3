"""Toy repositories whose tested input is not a plain int or str (issue 42), and whose tests compare in other ways.

cal      KeyError on a table keyed by a date's (month, day): the argument is a `datetime.date`
till     TypeError multiplying a `Decimal` bill by a float rate
parcels  TypeError on a dataclass field `__post_init__` leaves None: the argument is an instance built by `__init__`
orders   TypeError on a None coupon the test takes from a dict it imports from the package (`BASKET["coupon"]`)
temps    KeyError on a unit table; one repository, three failing tests that compare with `pytest.approx`,
         `assertAlmostEqual` and `math.isclose` (three ToyRepos, one per reproduction)
"""

from __future__ import annotations

from tests.support.corpus.entry import Edits, ToyRepo

_LABELS = '''"""Labels of the days of a year."""

HOLIDAYS = {(1, 1): "New Year", (12, 25): "Christmas", (12, 26): "Boxing Day"}


def label(day):
    return HOLIDAYS[(day.month, day.day)]
'''
CAL_CRASH = "    return HOLIDAYS[(day.month, day.day)]\n"
CAL = ToyRepo(
    "cal",
    {"cal/__init__.py": "", "cal/labels.py": _LABELS,
     "tests/test_labels.py": "from datetime import date\n\nfrom cal.labels import label\n\n\n"
                             "def test_ordinary_day_has_no_label():\n    assert label(date(2024, 3, 5)) == \"\"\n\n\n"
                             "def test_christmas():\n    assert label(date(2023, 12, 25)) == \"Christmas\"\n"},
    "python -m pytest -q tests/test_labels.py::test_ordinary_day_has_no_label", "KeyError", ("cal/labels.py", "label"),
    {"cal/labels.py": _LABELS.replace(CAL_CRASH, '    return HOLIDAYS.get((day.month, day.day), "")\n')},
    "from datetime import date\nfrom cal.labels import label")

_TIP = '''"""A bill with the tip added."""


def with_tip(bill, rate=0.15):
    return round(bill * (1 + rate), 2)
'''
TILL_CRASH = "    return round(bill * (1 + rate), 2)\n"
TILL = ToyRepo(
    "till",
    {"till/__init__.py": "", "till/tip.py": _TIP,
     "tests/test_tip.py": "from decimal import Decimal\n\nfrom till.tip import with_tip\n\n\n"
                          "def test_decimal_bill():\n"
                          "    assert with_tip(Decimal(\"20.00\")) == Decimal(\"23.00\")\n\n\n"
                          "def test_float_bill():\n    assert with_tip(10) == 11.5\n"},
    "python -m pytest -q tests/test_tip.py::test_decimal_bill", "TypeError", ("till/tip.py", "with_tip"),
    {"till/tip.py": _TIP.replace(TILL_CRASH, "    if isinstance(bill, Decimal):\n        rate = Decimal(str(rate))\n"
                                 + TILL_CRASH).replace('"""\n\n\n', '"""\n\nfrom decimal import Decimal\n\n\n')},
    "from decimal import Decimal\nfrom till.tip import with_tip")

_PARCEL = '''"""Parcel prices."""

from dataclasses import dataclass, field


@dataclass
class Parcel:
    weight: float
    insured: bool = False
    fee: float = field(init=False)

    def __post_init__(self):
        self.fee = 2.0 if self.insured else None


def price(parcel):
    return round(parcel.weight * 1.5 + parcel.fee, 2)
'''
PARCEL_CRASH = "    return round(parcel.weight * 1.5 + parcel.fee, 2)\n"
PARCELS = ToyRepo(
    "parcels",
    {"parcels/__init__.py": "", "parcels/price.py": _PARCEL,
     "tests/test_price.py": "from parcels.price import Parcel, price\n\n\ndef test_uninsured():\n"
                            "    assert price(Parcel(2)) == 3.0\n\n\ndef test_insured():\n"
                            "    assert price(Parcel(2, insured=True)) == 5.0\n"},
    "python -m pytest -q tests/test_price.py::test_uninsured", "TypeError", ("parcels/price.py", "price"),
    {"parcels/price.py": _PARCEL.replace("+ parcel.fee, 2)", "+ (parcel.fee or 0), 2)")},
    "from parcels.price import Parcel, price")

_TOTAL = '''"""Basket totals."""

PRICES = {"pen": 1.5, "ink": 4.0, "pad": 2.5}


def total(items, coupon=None):
    subtotal = sum(PRICES[name] * count for name, count in items)
    return round(subtotal - coupon, 2)
'''
ORDERS_CRASH = "    return round(subtotal - coupon, 2)\n"
ORDERS = ToyRepo(
    "orders",
    {"orders/__init__.py": "", "orders/total.py": _TOTAL,
     "orders/samples.py": '"""Sample baskets for the documentation and the tests."""\n\n'
                          'BASKET = {"items": [["pen", 2], ["ink", 1]], "coupon": None}\n',
     "tests/test_total.py": "from orders.samples import BASKET\nfrom orders.total import total\n\n\n"
                            "def test_sample_basket():\n"
                            "    assert total(BASKET[\"items\"], BASKET[\"coupon\"]) == 7.0\n\n\n"
                            "def test_coupon():\n    assert total([[\"pad\", 2]], 1.0) == 4.0\n"},
    "python -m pytest -q tests/test_total.py::test_sample_basket", "TypeError", ("orders/total.py", "total"),
    {"orders/total.py": _TOTAL.replace("subtotal - coupon, 2)", "subtotal - (coupon or 0), 2)")},
    "from orders.total import total")

_KELVIN = '''"""Temperatures in kelvin."""

SCALES = {"C": (1.0, 273.15), "F": (5 / 9, 255.37222222222223)}


def to_kelvin(value, unit):
    factor, offset = SCALES[unit]
    return value * factor + offset
'''
_TEMPS_FILES = {
    "temps/__init__.py": "", "temps/kelvin.py": _KELVIN,
    "tests/test_approx.py": "import pytest\n\nfrom temps.kelvin import to_kelvin\n\n\ndef test_kelvin_approx():\n"
                            "    assert to_kelvin(300, \"K\") == pytest.approx(300.0)\n\n\ndef test_celsius():\n"
                            "    assert to_kelvin(0, \"C\") == pytest.approx(273.15)\n",
    "tests/test_unit.py": "import unittest\n\nfrom temps.kelvin import to_kelvin\n\n\n"
                          "class KelvinTest(unittest.TestCase):\n"
                          "    def test_kelvin(self):\n        self.assertAlmostEqual(to_kelvin(300, \"K\"), 300.0)\n\n"
                          "    def test_celsius(self):\n        self.assertAlmostEqual(to_kelvin(0, \"C\"), 273.15)\n",
    "tests/test_isclose.py": "import math\n\nfrom temps.kelvin import to_kelvin\n\n\ndef test_kelvin_isclose():\n"
                             "    assert math.isclose(to_kelvin(300, \"K\"), 300.0)\n",
}
KELVIN_PY = "temps/kelvin.py"
KELVIN_CRASH = "    factor, offset = SCALES[unit]\n"
_KELVIN_FIX: Edits = {KELVIN_PY: _KELVIN.replace('255.37222222222223)}', '255.37222222222223), "K": (1.0, 0.0)}')}


def _temps(name: str, repro: str) -> ToyRepo:
    return ToyRepo(name, _TEMPS_FILES, f"python -m pytest -q {repro}", "KeyError", (KELVIN_PY, "to_kelvin"),
                   _KELVIN_FIX, "from temps.kelvin import to_kelvin")


TEMPS_APPROX = _temps("temps_approx", "tests/test_approx.py::test_kelvin_approx")
TEMPS_UNIT = _temps("temps_unit", "tests/test_unit.py::KelvinTest::test_kelvin")
TEMPS_ISCLOSE = _temps("temps_isclose", "tests/test_isclose.py::test_kelvin_isclose")

TYPED = (CAL, TILL, PARCELS, ORDERS, TEMPS_APPROX, TEMPS_UNIT, TEMPS_ISCLOSE)
