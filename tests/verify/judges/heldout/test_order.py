"""An order that is no order (verify/judges/heldout/order.py): the tested items in every order are drawn, and a fix
whose answer,
handed back, comes back in yet another order is refused where the base crashed comparing the items."""

from __future__ import annotations

from typing import Any

from patcher.verify.judges.heldout import order as heldorder
from patcher.verify.judges.heldout.answers import Answer, Sides
from patcher.verify.judges.heldout.target import Call, Target
from sandbox.plain import encode

COMPARE = Answer("raised", exc="TypeError", site=True,
                 args="(\"'<' not supported between instances of 'Task' and 'Task'\",)")
LOW, HIGH, MID = (["o", "q:Task", [["name", ["s", n]], ["priority", ["i", str(p)]]]] for n, p in
                  (("write", 2), ("fix", 1), ("read", 3)))


def tasks(*items: Any) -> Call:
    return {"pos": [["l", list(items)]], "kw": []}


def ret(*items: Any) -> Answer:
    return Answer("returned", ["l", list(items)])


def sides(tested: Call, answers: dict[str, Answer]) -> Sides:
    target = Target({"module": "q", "qualname": "ordered", "kind": "function"}, tested, [tested], True, "q.py")
    inputs = heldorder.rearrangements(tested)
    patched = [answers[repr(c)] for c in inputs]
    return Sides(target, inputs, [COMPARE] * 3 + [COMPARE] * len(inputs), [answers[repr(tested)]] * 3 + patched)


def test_every_other_order_of_a_short_list_is_drawn_and_long_lists_are_not() -> None:
    assert heldorder.rearrangements(tasks(LOW, HIGH)) == [tasks(HIGH, LOW)]
    assert len(heldorder.rearrangements(tasks(LOW, HIGH, MID))) == 5
    assert heldorder.rearrangements(tasks(LOW, LOW)) == [], "one order only"
    assert heldorder.rearrangements({"pos": [encode(list(range(5)))], "kw": []}) == []


def test_a_reversal_that_matches_the_tests_one_example_is_no_order() -> None:
    reversed_ = {repr(c): ret(*reversed(c["pos"][0][1])) for c in [tasks(LOW, HIGH), tasks(HIGH, LOW)]}
    s = sides(tasks(LOW, HIGH), reversed_)
    got = heldorder.judge(s, COMPARE, reversed_[repr(tasks(LOW, HIGH))])
    assert [(e.kind, e.reason) for e in got] == [("not_an_order", "overfitted")]


def test_a_sort_by_any_key_keeps_its_own_answer() -> None:
    def by_priority(c: Call) -> Answer:
        return ret(*sorted(c["pos"][0][1], key=lambda t: int(t[2][1][1][1])))
    calls = [tasks(LOW, HIGH, MID), *heldorder.rearrangements(tasks(LOW, HIGH, MID))]
    answers = {repr(c): by_priority(c) for c in calls}
    s = sides(tasks(LOW, HIGH, MID), answers)
    assert heldorder.judge(s, COMPARE, answers[repr(tasks(LOW, HIGH, MID))]) == []
    other_crash = Answer("raised", exc="TypeError", site=True, args="('unhashable type',)")
    rev = {repr(c): ret(*reversed(c["pos"][0][1])) for c in calls}
    assert heldorder.judge(sides(tasks(LOW, HIGH, MID), rev), other_crash, rev[repr(tasks(LOW, HIGH, MID))]) == [], \
        "the base did not crash comparing: a reversal may be what the function is for"
