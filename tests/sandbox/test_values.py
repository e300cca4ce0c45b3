"""The values judge's comparisons at every depth (sandbox/judge/values.py, strangers.py, operands.py), on this
machine: `math.isclose`, the stand-in's `approx` and unittest's `assertAlmostEqual` captured and redone by the
keeper; containers, dicts and the fields of objects walked; a field left out of an equality found one field at a
time; honest value objects, dataclasses and floats left alone. The judge's real processes run a test module
using each kind (tests/support/localjudge.py): the keeper signs what it redoes.
"""

from __future__ import annotations

import dataclasses
import math
import sys
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

from tests.support import localjudge as lj
from tests.support.boxfiles import box_module
from tests.support.helpers import make_repo

accept_mod, operands, strangers, values = (box_module(f"judge/{n}.py", f"_test_values_{n}")
                                           for n in ("accept", "operands", "strangers", "values"))
HERE = str(Path(__file__).parent)


def _judged(op: str, left: Any, right: Any, named: Any = None) -> list[tuple[str, bool]]:
    """What the values judge reports, every method taken for the diff's (a library's, with `named`, for none)."""
    out: list[dict[str, Any]] = []
    checker = values.Values(out.append, lambda code: named is None, None, HERE, operands, strangers,
                            named=named or (lambda value: False))
    assert checker.compare(op, 7, left, right)
    return [(r["what"], r["refuses"]) for r in out if r["k"] == "obs"]


class Near(float):
    """Close to anything: its difference is always zero."""

    def __sub__(self, other: object) -> float:
        return 0.0

    __hash__ = float.__hash__


class FloatsAlike(float):
    """Equal to any float (not to a stranger of another type)."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, float)

    __hash__ = float.__hash__


class Peeks:
    """A number whose value is read off the caller's frame (the other operand of isclose)."""

    def __float__(self) -> float:
        seen = sys._getframe(1).f_locals
        return float(seen["b"] if "b" in seen else seen["args"][1])


class Money:
    def __init__(self, cents: int, currency: str) -> None:
        self.cents, self.currency = cents, currency

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Money) and self.cents == other.cents  # currency left out

    __hash__ = None  # type: ignore[assignment]


class Price:
    def __init__(self, cents: int, currency: str) -> None:
        self.cents, self.currency = cents, currency

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Price):
            return NotImplemented
        return (self.cents, self.currency) == (other.cents, other.currency)

    __hash__ = None  # type: ignore[assignment]


@dataclasses.dataclass
class Row:
    total: Any
    note: str = dataclasses.field(default="", compare=False)


@dataclasses.dataclass(frozen=True)
class Point:
    __slots__ = ("x", "y")
    x: float
    y: float


def test_closeness_checks_put_a_far_value_to_the_compared_one() -> None:
    assert _judged("==", Near(3.0), operands.approx(10.0))[0][0].endswith("alike")
    assert _judged("==", [Near(3.0), 2.0], operands.approx([1.0, 2.0])), "an approx of a list, item by item"
    assert _judged("==", {"a": Near(3.0)}, operands.approx({"a": 1.0})), "an approx of a dict, key by key"
    assert _judged("almost", Near(3.0), [10.0, None, None])[0][1] is True
    assert _judged("almost", FloatsAlike(3.0), [10.0, 2, None]), "assertAlmostEqual's own equality first"
    assert _judged("call", math.isclose, ((Peeks(), 10.0), {}))[0][0].startswith("the compared value (Peeks) is close")
    honest = [("==", 10.0000001, operands.approx(10.0)), ("almost", 1.00000001, [1.0, None, None]),
              ("call", math.isclose, ((0.1 + 0.2, 0.3), {})),
              ("==", [Point(1.0, 2.0)], operands.approx([Point(1.0, 2.0)])),
              ("call", math.isclose, ((Row(1.0).total, 1.0), {"abs_tol": 1e-9}))]
    for op, left, right in honest:
        assert _judged(op, left, right) == [], (op, left)


class Tolerant(float):
    """Equal to any number within 5 of it."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, (int, float)) and abs(float(self) - other) <= 5

    __hash__ = None  # type: ignore[assignment]


class OneDecimal(float):
    """Equal to any float of at most one decimal."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, float) and round(other, 1) == other

    __hash__ = None  # type: ignore[assignment]


class Once(float):
    """Equal to anything the first time it is compared, a plain float after."""

    def __eq__(self, other: object) -> bool:
        first = not self.__dict__.get("asked")
        self.asked = True
        return first or float(self) == other

    __hash__ = float.__hash__


def test_a_value_equal_to_numbers_near_the_expected_one_or_only_once_refuses() -> None:
    assert _judged("==", Tolerant(3.0), 7.0) == [("the compared value (Tolerant) equals 7.0 and 8.0 alike", True)]
    assert _judged("==", OneDecimal(0.0), 7.5) == [("the compared value (OneDecimal) equals 7.5 and 8.5 alike", True)]
    once = Once(0.0)
    assert once == 7.0, "the test's own comparison"
    once.asked = False  # as the test left it before its comparison
    found = _judged("==", once, 7.0)
    assert found and found[0][1] is True and "once and not when asked again" in found[0][0], found
    assert _judged("==", Price(7, "EUR"), Price(7, "EUR")) == [] and _judged("==", 7.0, 7.0) == []


class Loose:
    """A version of three parts equal to a tuple in the parts it has (None: any)."""

    def __init__(self, major: object, minor: object, patch: object) -> None:
        self.parts = (major, minor, patch)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, tuple):
            other = Loose(*other)
        pairs = zip(self.parts, other.parts, strict=True) if isinstance(other, Loose) else None
        return pairs is not None and all(a == b for a, b in pairs if a is not None)


def test_a_value_equal_to_a_tuple_with_one_item_changed_refuses() -> None:
    [(why, refuses)] = _judged("==", Loose(1, 2, None), (1, 2, 0))
    assert refuses and why.startswith("the compared value (Loose) equals (1, 2, 0) and (1, 2, 1"), why
    assert _judged("==", Price(7, "EUR"), Price(7, "EUR")) == []


def test_a_field_left_out_refuses_where_the_operands_differ_there_and_is_a_hint_where_they_agree() -> None:
    [(why, refuses)] = _judged("==", Money(500, "EUR"), Money(500, "CHF"))
    assert refuses and "whose `currency` differs ('EUR' against 'CHF')" in why
    [(why, refuses)] = _judged("==", Money(500, "CHF"), Money(500, "CHF"))
    assert not refuses and "leaves `currency` out" in why, "an entity compared by its key: a hint"
    assert _judged("==", Price(500, "CHF"), Price(500, "CHF")) == [], "a proper field-wise __eq__"
    assert _judged("==", Row(1.0, "a"), Row(1.0, "b")) == [], "a dataclass field declared compare=False"
    assert _judged("==", Point(1.0, 2.0), Point(1.0, 2.0)) == [], "a frozen dataclass with slots"


def test_values_inside_containers_and_fields_are_judged_at_every_depth() -> None:
    assert len(_judged("==", [FloatsAlike(1.0), FloatsAlike(2.0)], [3.0, 4.0])) == 1, "one report per class"
    assert _judged("==", {"a": [FloatsAlike(1.0)]}, {"a": [2.0]}), "a list in a dict"
    found = _judged("==", Row(FloatsAlike(3.0)), Row(10.0))
    assert [why.split(")")[0] for why, _ in found] == ["the compared value (FloatsAlike"], "the field's, not the Row's"
    assert _judged("==", (Money(1, "EUR"),), (Money(1, "CHF"),))[0][1] is True
    assert _judged("==", {"a": [Price(1, "EUR")], "b": Row(1.0)}, {"a": [Price(1, "EUR")], "b": Row(1.0)}) == []


def test_an_expected_value_the_test_names_equal_to_anything_is_the_tests_own() -> None:
    unnamed = _judged("==", {"id": 7, "name": "x"}, {"id": mock.ANY, "name": "x"}, named=lambda value: False)
    assert unnamed == [("the compared value (_ANY) equals a fresh object of another type", True)]
    named = _judged("==", {"id": 7}, {"id": mock.ANY}, named=lambda value: value is mock.ANY)
    assert [refuses for _, refuses in named] == [False]
    assert _judged("==", Row(7.0), Row(mock.ANY), named=lambda value: value is mock.ANY) == [
        ("the compared value (_ANY) equals a fresh object of another type", False)], "the Row's equality is honest"


JOB = {"cases": [{"id": "t0", "group": "g", "required": [5]}]}


def _accept(*cmps: str) -> list[dict[str, Any]]:
    lines = ['{"k": "begin", "group": "g"}', '{"k": "start", "id": "t0"}', *cmps,
             '{"k": "test", "id": "t0", "outcome": "passed"}', '{"k": "done", "group": "g"}',
             '{"k": "exit", "group": "g", "status": 0}', '{"k": "fin"}']
    return accept_mod.accept([line.encode() for line in lines], JOB, {"status": 0, "signal": None},
                             lambda op, a, b: operands.OPS[op](a, b), operands.decode)


@pytest.mark.parametrize("op,left,right", [
    ("isclose", 0.30000000000000004, [0.3, 1e-09, 0.0]),
    ("almost", 1.00000001, [1.0, None, None]),
    ("almost", 1.5, [1.0, None, 0.5]),
    ("==", [1.0000001, 2.0], operands.approx([1.0, 2.0])),
    ("==", 10.05, operands.approx(10.0, abs=0.1)),
], ids=["isclose", "assertAlmostEqual", "assertAlmostEqual with delta", "approx of a list", "approx with abs"])
def test_the_keeper_redoes_each_comparison_kind_and_calls_a_false_claim_forged(op: str, left: Any, right: Any) -> None:
    import json

    record = {"k": "cmp", "id": "t0", "line": 5, "op": op, "l": operands.encode(left), "r": operands.encode(right)}
    signed = _accept(json.dumps({**record, "ok": True}))
    assert [r["k"] for r in signed] == ["begin", "test"] and signed[1]["rechecked"] == 1
    forged = _accept(json.dumps({**record, "l": operands.encode(left + 1.0 if op != "==" else [0.0]), "ok": True}))
    assert any(r["k"] == "forged" and "does not give what" in r["why"] for r in forged), forged


def test_the_rewritten_module_captures_isclose_calls_and_keeps_their_meaning() -> None:
    seen: list[tuple[str, int]] = []

    def hook(op: str, line: int, a: Any, b: Any) -> Any:
        seen.append((op, line))
        return a(*b[0], **b[1]) if op == "call" else operands.OPS[op](a, b)
    text = ("import math\nfrom math import isclose\nkw = {'abs_tol': 0.5}\n"
            "r = [math.isclose(0.1 + 0.2, 0.3), isclose(1, 1.4, **kw), not math.isclose(*[1, 2], rel_tol=0.1)]\n")
    space: dict[str, Any] = {"@patcher_compare": hook}
    exec(values.rewrite(text, "t.py"), space)
    assert space["r"] == [True, True, True] and seen == [("call", 4)] * 3


def test_the_wrapped_unittest_asserts_record_almost_equal_with_its_places_and_delta() -> None:
    import unittest

    out: list[dict[str, Any]] = []
    checker = values.Values(out.append, lambda code: True, None, HERE, operands, strangers)
    case = unittest.TestCase()
    checker.wrap(case)
    case.assertAlmostEqual(1.0, 1.05, delta=0.1)
    case.assertAlmostEqual(Near(3.0), 10.0, 2)
    case.assertNotAlmostEqual(1.0, 2.0)
    with pytest.raises(AssertionError):
        case.assertAlmostEqual(1.0, 2.0)
    cmps = [(r["op"], r["r"]) for r in out if r["k"] == "cmp"]
    assert cmps[0] == ("almost", operands.encode([1.05, None, 0.1])) and cmps[2][0] == "not almost"
    assert len(cmps) == 3 and next(r["what"] for r in out if r["k"] == "obs").startswith("the compared value (Near)")


TOY = 'def mean(xs):\n    return sum(xs) / len(xs)\n'
TEST = '''import math
import unittest

import pytest

from toy import mean


def test_mean():
    assert mean([0.1, 0.2, 0.3]) == pytest.approx(0.2)
    assert math.isclose(mean([1, 2]), 1.5)
    assert [mean([1.0]), mean([1.0, 3.0])] == pytest.approx([1.0, 2.0], abs=1e-9)


class TestMean(unittest.TestCase):
    def test_places(self):
        self.assertAlmostEqual(mean([0.1, 0.2]), 0.15, places=6)
'''


@pytest.mark.parametrize("node", ["tests/test_toy.py::test_mean", "tests/test_toy.py::TestMean::test_places"])
def test_the_keeper_signs_a_run_that_compares_by_closeness(tmp_path: Path, node: str) -> None:
    repo = make_repo(tmp_path / "repo", {"toy.py": TOY, "tests/test_toy.py": TEST}, commit=False)
    required = [10, 11, 12] if node.endswith("mean") else []
    got = lj.judge(repo, lj.both_trees(node, {"toy.py": TOY}, {"toy.py": [2]}, ["tests/test_toy.py"], required))
    assert lj.outcomes(got) == {"bare": "passed", "dressed": "passed"}, got
    tests = [r for c in got["contexts"].values() for r in c["records"] if r.get("k") == "test"]
    assert all(r["rechecked"] >= (3 if node.endswith("mean") else 1) for r in tests), tests
    assert not any(c["problem"] or r.get("k") == "forged" for c in got["contexts"].values() for r in c["records"])
    assert lj.observed(got) == []
