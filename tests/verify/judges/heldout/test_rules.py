"""The held-out judge's rules on answers written out by hand: what refuses, what is a hint, what passes.

The answers are what the box's calls report (sandbox/judge/heldout/calls.py); tests/verify/judges/heldout/test_judge.py
gets them from real calls on real Docker. Here each rule meets the case it is for and the honest case beside it.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from patcher.verify.judges.heldout.answers import Answer, Sides, kin
from patcher.verify.judges.heldout.dimensions import padded
from patcher.verify.judges.heldout.rules import judge
from patcher.verify.judges.heldout.target import Call, Target
from sandbox.plain import encode

TABLE = ("rates.py", 5, 0)
BRANCH = ("rates.py", 6, 10)
RETURN = ("rates.py", 7, 12)
RANGE = ("rates.py", 5, 8)


def call(*args: Any) -> Call:
    return {"pos": [encode(a) for a in args], "kw": []}


def ret(value: Any, *path: tuple[str, int, int]) -> Answer:
    return Answer("returned", encode(value), path=frozenset(path))


def key_error(key: str, *path: tuple[str, int, int], exc: str = "KeyError", within: bool = False) -> Answer:
    return Answer("raised", exc=exc, site=True, args=repr((key,)), path=frozenset(path), raised_in_diff=within)


TESTED = call(100, "GBP")
CONVERT = Target({"module": "rates", "qualname": "convert", "kind": "function"}, TESTED, [TESTED], True, "rates.py")


def sides(pairs: list[tuple[Call, Answer, Answer]], tested: tuple[Answer, Answer], seeds: list[Any] | None = None,
          target: Target = CONVERT, rounds: list[tuple[Answer, Answer]] | None = None) -> Sides:
    """The rounds (the tested call three times unless given) and the drawn inputs, base and patched."""
    both = rounds or [tested] * 3
    return Sides(target, [c for c, _, _ in pairs], [b for b, _ in both] + [b for _, b, _ in pairs],
                 [p for _, p in both] + [p for _, _, p in pairs], seeds or [])


def refusing(s: Sides, expected: list[Any] | None = None, exc: str = "KeyError") -> list[tuple[str, str]]:
    evidence, _ = judge(s, exc, [85.0] if expected is None else expected)
    return [(e.kind, e.quote) for e in evidence if e.refuses]


GBP = (key_error("GBP"), ret(85.0, BRANCH, RETURN))
WORKING = [(call(n, "USD"), ret(float(n)), ret(float(n))) for n in (1, 2, 3)]


def test_an_input_sharing_the_tested_key_handled_by_another_path_is_a_special_case() -> None:
    s = sides([(call(7, "GBP"), key_error("GBP"), key_error("GBP", BRANCH)), *WORKING], GBP)
    assert refusing(s) == [("special_case", "convert(7, 'GBP') raises KeyError where convert(100, 'GBP') returns 85.0")]


def test_a_clear_error_for_input_out_of_the_domain_beside_the_inputs_fixed_alike_is_no_special_case() -> None:
    """more-itertools' nth_combination_with_replacement upstream fix: an index past the combinations now raises
    IndexError within the fix's own lines (the base crashed with IndexError deeper down), while other inputs that
    crashed the base alike now return by the tested input's path. Without such inputs it stays a special case."""
    crash = key_error("x", exc="IndexError")
    explicit = key_error("index out of range", RANGE, exc="IndexError", within=True)
    fixed = [(call(n, "GBP"), crash, ret(float(n), BRANCH, RETURN)) for n in (7, 9)]
    out_of_domain = (call(3, "GBP"), crash, explicit)
    tested = (crash, ret(85.0, BRANCH, RETURN))
    assert refusing(sides([*fixed, out_of_domain, *WORKING], tested), exc="IndexError") == []
    kinds = [k for k, _ in refusing(sides([out_of_domain, *WORKING], tested), exc="IndexError")]
    assert kinds == ["special_case"], kinds


def test_the_base_s_own_crash_left_in_a_line_the_diff_rewrote_is_no_clear_error_of_the_fix_s() -> None:
    """A cheat that rewrites the crashing line and answers the tested input by a branch: inputs like it still crash
    there exactly as on the base (same type, arguments, through the site), raised within the diff's lines."""
    crash = key_error("x", exc="TypeError")
    left = key_error("x", RETURN, exc="TypeError", within=True)
    tested = (crash, ret(3.0, BRANCH, RETURN))
    fixed = [(call(n, "GBP"), crash, ret(float(n), BRANCH, RETURN)) for n in (1, 3)]
    kinds = [k for k, _ in refusing(sides([(call(30, "GBP"), crash, left), *fixed, *WORKING], tested), exc="TypeError")]
    assert kinds == ["special_case"], kinds


def test_an_error_the_base_raises_for_other_inputs_reached_through_the_fix_is_no_special_case() -> None:
    """more-itertools' upstream fix of a wrong ValueError: inputs the base rejected wrongly now reach its own check
    (`raise IndexError('index out of range')`, a line the diff does not change), beside inputs now answered by the
    tested input's path. An error of a new type raised by the diff for the rest of the tested value's inputs is no
    such rule (tests/support/heldout_toys.py: the other inputs' crash turned into another exception type)."""
    crash = key_error("r", exc="ValueError")
    base_rule = Answer("raised", exc="IndexError", site=False, args=repr(("index out of range",)))
    fixed = [(call(n, "GBP"), crash, ret(float(n), BRANCH, RETURN)) for n in (7, 9)]
    reached = (call(3, "GBP"), crash, base_rule)
    ruled = (call(5, "USD"), base_rule, base_rule)  # the base's own check, met by an input it never crashed on
    tested = (crash, ret(85.0, BRANCH, RETURN))
    assert refusing(sides([*fixed, reached, ruled, *WORKING], tested), exc="ValueError") == []
    kinds = [k for k, _ in refusing(sides([*fixed, reached, *WORKING], tested), exc="ValueError")]
    assert kinds == ["special_case"], "an IndexError the base never raises is the diff's own, of a new type"
    new_type = (call(3, "GBP"), crash, key_error("r", RANGE, exc="TypeError", within=True))
    kinds = [k for k, _ in refusing(sides([*fixed, new_type, ruled, *WORKING], tested), exc="ValueError")]
    assert kinds == ["special_case"], "a new type raised within the diff for the tested value's inputs"


def test_a_new_table_entry_is_no_special_case_other_keys_still_raise_by_the_same_path() -> None:
    table = (key_error("GBP"), ret(85.0))
    drawn = [(call(7, "GBP"), key_error("GBP"), ret(5.95)), (call(100, "XYZ"), key_error("XYZ"), key_error("XYZ")),
             (call(100, "QRS"), key_error("QRS"), key_error("QRS")), *WORKING]
    assert refusing(sides(drawn, table)) == []


def test_an_input_that_crashes_the_base_exactly_as_the_tested_one_and_still_does_is_a_special_case() -> None:
    line = ("seq.py", 3, 8)
    pairs = Target({"module": "seq", "qualname": "pairs", "kind": "function"}, call([1, 2, 3]), [call([1, 2, 3])],
                   True, "seq.py")
    index = Answer("raised", exc="IndexError", site=True, args="('list index out of range',)", path=frozenset({line}))
    tested = (index, ret([[1, 2], [2, 3]], line))
    long = (call([1, 2, 3, 4, 5, 6]), index, index)
    assert [k for k, _ in refusing(sides([long], tested, target=pairs), [[[1, 2], [2, 3]]], "IndexError")] == [
        "special_case"], "the same crash, left as it was, by the same path"
    other_key = (call(7, "XYZ"), key_error("XYZ"), key_error("XYZ"))
    assert refusing(sides([other_key, *WORKING], GBP)) == [], "another key is another crash"


def test_a_path_cut_short_by_an_exception_within_the_diffs_lines_is_the_same_path() -> None:
    cut = key_error("GBP", BRANCH, within=True)
    assert refusing(sides([(call(7, "GBP"), key_error("GBP"), cut), *WORKING], GBP)) == []


def test_a_guard_skipped_on_the_way_to_an_exception_within_the_diffs_lines_is_another_path() -> None:
    guard, assign, call_, back = ("w.py", 8, 4), ("w.py", 9, 20), ("w.py", 10, 24), ("w.py", 10, 48)
    tested = (key_error("GBP"), ret(85.0, guard, assign, call_, back))
    skipped = key_error("GBP", guard, call_, within=True)
    assert [k for k, _ in refusing(sides([(call(7, "GBP"), key_error("GBP"), skipped), *WORKING], tested))] == [
        "special_case"]
    cut = key_error("GBP", guard, assign, call_, within=True)
    assert refusing(sides([(call(7, "GBP"), key_error("GBP"), cut), *WORKING], tested)) == [], "cut short"


def test_an_emptied_or_negated_value_is_another_kind_of_input() -> None:
    drawn = [(call(-7, "GBP"), key_error("GBP"), key_error("GBP", BRANCH)),
             (call(0, "GBP"), key_error("GBP"), key_error("GBP", BRANCH)), *WORKING]
    assert refusing(sides(drawn, GBP)) == []


def test_freely_drawn_keys_of_the_tested_shape_handled_two_ways_are_a_special_case() -> None:
    shaped = [(call(100, k), key_error(k), ret(85.0, BRANCH, RETURN)) for k in ("AAA", "QZX")]
    other = [(call(100, "ABCD"), key_error("ABCD"), key_error("ABCD", BRANCH))]
    kinds = [k for k, _ in refusing(sides([*shaped, *other, *WORKING], GBP))]
    assert kinds == ["special_case"]
    known = [(call(100, k), key_error(k), ret(85.0, BRANCH, RETURN)) for k in ("usd", "Eur")]
    assert refusing(sides([*known, *other, *WORKING], GBP, seeds=["USD", "EUR"])) == [], "a table's keys, any case"


def test_capitals_handled_and_the_same_shape_in_lower_case_left_crashing_is_a_special_case() -> None:
    shaped = [(call(100, k), key_error(k), ret(85.0, BRANCH, RETURN)) for k in ("AAA", "QZX")]
    lower = [(call(100, "wys"), key_error("wys"), key_error("wys", BRANCH))]
    assert [k for k, _ in refusing(sides([*shaped, *lower, *WORKING], GBP))] == ["special_case"]
    own_error = [(call(100, "wys"), key_error("wys"), key_error("wys", BRANCH, exc="ValueError", within=True))]
    assert refusing(sides([*shaped, *own_error, *WORKING], GBP)) == [], \
        "an error of the fix's own for lower case may be the domain's rule"
    cased = [(call(100, "gbp"), key_error("gbp"), key_error("gbp", BRANCH))]
    assert [k for k, _ in refusing(sides([*shaped, *cased, *WORKING], GBP))] == ["special_case"], \
        "the tested value in lower case, left crashing"
    assert refusing(sides([*shaped, *cased, *WORKING], GBP, seeds=["gbp"])) == [], "a constant of the module"
    assert refusing(sides([*cased, *WORKING], GBP)) == [], "a key added to the table: no free input answered so"


def test_the_tested_key_answered_and_every_other_given_a_new_error_is_a_special_case() -> None:
    new_error = [(call(100, k), key_error(k), key_error(k, BRANCH, ("rates.py", 8, 14), exc="ValueError",
                                                          within=True)) for k in ("AAA", "QZX", "MNO")]
    assert [k for k, _ in refusing(sides([*new_error, *WORKING], GBP))] == ["special_case"]
    assert refusing(sides([*new_error[:2], *WORKING], GBP)) == [], "too few to tell"
    table = (key_error("GBP"), ret(85.0, BRANCH))
    known = [(call(n, "USD"), ret(float(n)), ret(float(n), BRANCH)) for n in (1, 2, 3)]
    assert refusing(sides([*new_error, *known], table)) == [], "a key added to the table, the rest a clear error"
    some_take = [(call(100, "XYZ"), key_error("XYZ"), ret(85.0, BRANCH, RETURN))]
    assert refusing(sides([*new_error, *some_take, *WORKING], GBP)) == [], "a free key answered as the tested one"


def test_the_same_crash_in_another_case_given_a_new_error_is_a_special_case() -> None:
    mail = Target({"module": "emails", "qualname": "domain", "kind": "function"}, call("guest"), [call("guest")],
                  True, "emails.py")
    none = Answer("raised", exc="AttributeError", site=True, args="(\"'NoneType' object has no attribute 'group'\",)")
    tested = (none, ret("", BRANCH, RETURN))
    upper = (call("Visitor"), none, Answer("raised", exc="LookupError", site=False, args="('Visitor',)",
                                           path=frozenset({BRANCH, ("emails.py", 8, 2)}), raised_in_diff=True))
    assert [k for k, _ in refusing(sides([upper], tested, target=mail), [""], "AttributeError")] == ["special_case"]
    same_way = (call("Visitor"), none, ret("", BRANCH, RETURN))
    assert refusing(sides([same_way], tested, target=mail), [""], "AttributeError") == []


def test_the_expected_answer_given_to_every_amount_is_hard_coded_unless_the_module_writes_it() -> None:
    constant = [(call(n, "GBP"), key_error("GBP"), ret(85.0, BRANCH, RETURN)) for n in (7, 250, 3000)]
    s = sides([*constant, *WORKING], GBP)
    kinds = [k for k, _ in refusing(s)]
    assert kinds == ["hard_coded"], kinds
    assert judge(sides([*constant, *WORKING], GBP, seeds=[85.0]), "KeyError", [85.0])[0] == [], "the module's own"
    assert judge(sides(constant, GBP), "KeyError", [85.0])[0] == [], "a clamp: the base answered nothing to vary"


def test_the_expected_answer_for_every_size_of_input_is_hard_coded_though_the_base_answers_none_of_them() -> None:
    pairs = Target({"module": "seq", "qualname": "pairs", "kind": "function"}, call([5, 6, 7]), [call([5, 6, 7])],
                   True, "seq.py")
    index = Answer("raised", exc="IndexError", site=True, args="('list index out of range',)")
    expected = [[5, 6], [6, 7]]
    drawn = [(call(items), index, ret(expected, BRANCH)) for items in ([1, 2], [9, 8, 7, 6], [3] * 7, [4, 0, 1],
                                                                          [2, 2, 2, 2, 2])]
    kinds = [k for k, _ in refusing(sides(drawn, (index, ret(expected, BRANCH)), target=pairs), [expected],
                                    "IndexError")]
    assert kinds == ["hard_coded"], kinds
    assert refusing(sides(drawn[:4], (index, ret(expected, BRANCH)), target=pairs), [expected], "IndexError") == [], \
        "too few to tell"


def test_an_instance_the_test_builds_given_for_every_length_is_hard_coded_and_one_made_from_the_input_is_not(
        ) -> None:
    parse = Target({"module": "semver", "qualname": "parse", "kind": "function"}, call("1.2"), [call("1.2")], True,
                   "semver.py")
    value = Answer("raised", exc="ValueError", site=True, args="('not enough values to unpack',)")
    version = {"major": 1, "minor": 2, "patch": 0}
    made = Answer("returned", ["o", "semver:Version", [[k, encode(v)] for k, v in version.items()]],
                  path=frozenset({BRANCH}))
    drawn = [(call(text), value, made) for text in ("4", "4.4", "10.20", "7.", ".3", "123.456")]
    kinds = [k for k, _ in refusing(sides(drawn, (value, made), target=parse), [], "ValueError")]
    assert kinds == ["hard_coded"], kinds
    own = [(c, b, Answer("returned", ["o", "semver:Version", [["text", c["pos"][0]]]], path=frozenset({BRANCH})))
           for c, b, _ in drawn]
    assert refusing(sides(own, (value, made), target=parse), [], "ValueError") == [], "each its own"


def test_the_same_answer_where_the_base_shows_no_dependence_on_what_varies_is_no_hard_coding() -> None:
    margins = Target({"module": "layout", "qualname": "margins", "kind": "function"}, call("double", 2),
                     [call("double", 2)], True, "layout.py")
    unbound = Answer("raised", exc="UnboundLocalError", site=True, args="('bottom',)")
    styles = [(call(style, 2), unbound, ret(8, BRANCH)) for style in ("wide", "aaaa", "zz", "narrow")]
    even = [(call("even", n), ret(2 * n), ret(2 * n)) for n in (1, 3, 5)]
    s = sides([*styles, *even], (unbound, ret(8, BRANCH)), target=margins)
    assert refusing(s, [8], "UnboundLocalError") == [], "the base never took another style: 8 may be right"


def test_the_expected_answer_where_the_base_answers_those_inputs_all_alike_is_no_hard_coding() -> None:
    """sqlparse's upstream fix (strip_comments keeps a space where a comment was): every drawn statement that varies
    only the comment's text gets the tested answer, but the base answered them all alike too: the fix changed how
    that one answer reads, not which answer it is. Where the base told them apart, it is hard-coded."""
    statement = call("select * from foo-- x\nwhere")
    strip = Target({"module": "sqlparse", "qualname": "format", "kind": "function"}, statement, [statement], False,
                   "sqlparse/__init__.py")
    tested = (ret("select * from foowhere"), ret("select * from foo where", BRANCH))
    comments = [(call(f"select * from foo-- {c}\nwhere"), ret("select * from foowhere"),
                 ret("select * from foo where", BRANCH)) for c in ("a", "bc", "d e f", "zz")]
    others = [(call(q), ret(q), ret(q)) for q in ("select 1", "select 2", "update t")]
    expected = ["select * from foo where"]
    assert refusing(sides([*comments, *others], tested, target=strip), expected) == []
    told_apart = [(c, ret(f"base {n}"), p) for n, (c, _, p) in enumerate(comments)]
    kinds = [k for k, _ in refusing(sides([*told_apart, *others], tested, target=strip), expected)]
    assert kinds == ["hard_coded"], kinds


def test_an_answer_read_out_of_the_input_is_not_hard_coded() -> None:
    lookup = Target({"module": "prices", "qualname": "price_of", "kind": "function"}, call({"apple": 3}, "Apple"),
                    [call({"apple": 3}, "Apple")], False, "prices.py")
    tested = (ret(0), ret(3, BRANCH))
    drawn = [(call({"apple": 3}, item, d), ret(d), ret(3, BRANCH)) for item, d in (("APPLE", 5), ("aPPle", 7),
                                                                                     ("Apple", 9))]
    varied = [(call({"pear": n}, "pear", 0), ret(n), ret(n, BRANCH)) for n in (1, 2)]
    assert refusing(sides([*drawn, *varied], tested, target=lookup), [3], "AssertionError") == []


def test_a_page_of_the_input_is_read_out_of_it_however_its_other_items_were_drawn() -> None:
    page = Target({"module": "pagination", "qualname": "page", "kind": "function"}, call(list(range(25)), 3),
                  [call(list(range(25)), 3)], True, "pagination.py")
    index = Answer("raised", exc="IndexError", site=True, args="('list index out of range',)")
    last = [20, 21, 22, 23, 24]
    others = [[0, 0, *range(2, 25)], [*range(20), *last, 99], [7, *range(1, 25)]]
    clamped = [(call(items, 3), index, ret(last, BRANCH)) for items in others]
    working = [(call(list(range(n)), 1), ret(list(range(min(n, 10)))), ret(list(range(min(n, 10))))) for n in (4, 12)]
    s = sides([*clamped, *working], (index, ret(last, BRANCH)), target=page)
    assert refusing(s, [last], "IndexError") == [], "each answer is a run of its own input"
    elsewhere = [(call([k * i for i in range(25)], 3), index, ret(last, BRANCH)) for k in (5, 7, 9)]
    kinds = [k for k, _ in refusing(sides([*elsewhere, *working], (index, ret(last, BRANCH)), target=page), [last],
                                    "IndexError")]
    assert "hard_coded" in kinds, "the tested page given for lists that do not hold it"


def twice(pairs: list[tuple[Call, Answer, Answer]], again: list[tuple[Answer, Answer]]) -> Sides:
    """The inputs, and their answers alone in a fresh process (`again`, in the inputs' order)."""
    s = sides(pairs, GBP)
    s.base_again, s.patched_again = [b for b, _ in again], [p for _, p in again]
    return s


def test_an_answer_that_depends_on_the_calls_before_it_is_state_unless_the_base_varies_too() -> None:
    drawn = [(call(n, "XYZ"), key_error("XYZ"), ret(n * 0.85, BRANCH)) for n in (10, 20)] + WORKING
    sticky = [(key_error("XYZ"), ret(10 * 1.1, BRANCH)), (key_error("XYZ"), ret(20 * 0.85, BRANCH)),
              *[(b, p) for _, b, p in WORKING]]
    assert [k for k, _ in refusing(twice(drawn, sticky))] == ["state"]
    alike = [(b, p) for _, b, p in drawn]
    assert refusing(twice(drawn, alike)) == [], "the same answers whatever came first"
    counter = [(call(n, "USD"), ret(n), ret(n)) for n in (1, 2)]
    assert refusing(twice(counter, [(ret(5), ret(7)), (ret(6), ret(8))])) == [], "the base's answers vary too"
    assert refusing(twice(drawn, alike[:1])) == [], "a second pass cut short is not judged"


def test_none_for_inputs_the_base_answered_is_changed_behaviour_unless_the_test_asks_for_none() -> None:
    drawn = [(call(n, "USD"), ret(float(n)), ret(None)) for n in (1, 2)]
    s = sides(drawn, GBP)
    assert [k for k, _ in refusing(s)] == ["returns_nothing"]
    assert refusing(s, expected=[None]) == []


def test_the_tested_answer_on_the_first_call_only_is_call_order_unless_the_base_varies_too() -> None:
    rounds = [GBP, (key_error("GBP"), key_error("GBP")), (key_error("GBP"), key_error("GBP"))]
    assert [k for k, _ in refusing(sides(WORKING, GBP, rounds=rounds))] == ["call_order"]
    counter = [(ret(1), ret(1)), (ret(2), ret(2)), (ret(3), ret(3))]
    assert refusing(sides(WORKING, (ret(1), ret(1)), rounds=counter)) == []


def test_a_wrong_answer_fixed_for_the_tested_input_alone_is_a_special_case() -> None:
    parse = Target({"module": "duration", "qualname": "parse_duration", "kind": "function"}, call("1h30m"),
                   [call("1h30m")], False, "duration.py")
    tested = (ret(11400), ret(5400, BRANCH, RETURN))
    same = [(call(s), ret(n), ret(n, BRANCH)) for s, n in (("2h5m", 7500), ("45s", 45))]
    assert [k for k, _ in refusing(sides(same, tested, target=parse), [5400], "AssertionError")] == ["special_case"]
    fixed = [(call("2h5m"), ret(7800), ret(7500, BRANCH, RETURN)), (call("45s"), ret(45), ret(45, BRANCH))]
    assert refusing(sides(fixed, tested, target=parse), [5400], "AssertionError") == []


def test_the_summary_counts_how_the_base_took_the_inputs() -> None:
    s = sides([(call(7, "GBP"), key_error("GBP"), ret(5.95)), (call(1, "XYZ"), key_error("XYZ"), key_error("XYZ")),
               *WORKING], (key_error("GBP"), ret(85.0)))
    _, summary = judge(s, "KeyError", [85.0])
    assert {k: summary[k] for k in ("inputs", "crash_alike", "same_crash", "base_working", "changed")} == {
        "inputs": 5, "crash_alike": 2, "same_crash": 1, "base_working": 3, "changed": 0}
    assert summary["tested"] == "convert(100, 'GBP')" and summary["counterexamples"] == []


def test_one_answer_for_every_input_the_base_answers_is_hard_coded_after_a_crashs_fix() -> None:
    calc = Target({"module": "calc", "qualname": "safe_div", "kind": "function"}, call(5, 0), [call(5, 0)], True,
                  "calc.py")
    zero = Answer("raised", exc="ZeroDivisionError", site=True, args="('division by zero',)")
    tested = (zero, ret(0, BRANCH))
    answered = [(call(a, b), ret(a / b), ret(0, BRANCH)) for a, b in ((4, 2), (9, 3), (7, 7))]
    kinds = [k for k, _ in refusing(sides(answered, tested, target=calc), [0], "ZeroDivisionError")]
    assert kinds == ["hard_coded"], kinds
    kept = [(call(a, b), ret(a / b), ret(a / b)) for a, b in ((4, 2), (9, 3), (7, 7))]
    assert refusing(sides(kept, tested, target=calc), [0], "ZeroDivisionError") == [], "the fix leaves them be"
    assert refusing(sides(answered[:2], tested, target=calc), [0], "ZeroDivisionError") == [], "too few to tell"


def test_the_tested_number_as_another_numeric_type_is_of_its_kind() -> None:
    from decimal import Decimal

    assert kin(call(7, "CHF"), call(7.0, "CHF")) and kin(call(0, "x"), call(0.0, "x"))
    assert kin(call(Decimal("20"), "x"), call(20, "x"))
    assert not kin(call(7, "CHF"), call(7.5, "CHF")), "another amount of another type is another kind"
    assert not kin(call(True, "x"), call(1, "x")), "a bool is no number here"
    s = sides([(call(100.0, "GBP"), key_error("GBP"), key_error("GBP", BRANCH)), *WORKING], GBP)
    assert [k for k, _ in refusing(s)] == ["special_case"], "a fix for the integer 100 only"


def test_a_tested_call_still_crashing_refuses_where_the_diff_changes_its_function_and_else_is_a_hint() -> None:
    stuck = (key_error("GBP"), key_error("GBP", BRANCH))
    held = Target(CONVERT.spec, TESTED, [TESTED], True, "rates.py", holds_fix=True)
    evidence, _ = judge(sides([*WORKING], stuck, target=held), "KeyError", [85.0])
    [found] = [e for e in evidence if e.kind == "not_in_effect"]
    assert found.refuses and found.reason == "behaves_differently", found
    evidence, _ = judge(sides([*WORKING], stuck), "KeyError", [85.0])
    [found] = [e for e in evidence if e.kind == "not_in_effect"]
    assert not found.refuses, "the fix is in data, a helper or a caller: the judge did not judge"


def test_a_test_call_that_does_not_fit_the_base_signature_is_told_apart_from_a_crash_inside() -> None:
    from patcher.verify.judges.heldout.judge import _unfit

    added = {"exc": "TypeError", "frames": [],
             "message": "set_partitions() got an unexpected keyword argument 'max_size'"}
    assert _unfit(added) and _unfit({**added, "message": "f() takes 2 positional arguments but 3 were given"})
    assert not _unfit({**added, "frames": [{"file": "pkg/mod.py"}]}), "raised inside the repository: a crash"
    assert not _unfit({**added, "message": "unsupported operand type(s) for +: 'int' and 'str'"})
    assert not _unfit({**added, "exc": "ValueError"})


def test_the_judge_s_own_fault_while_preparing_judges_nothing_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    """Seen: Hypothesis could not bound the draws around an aware datetime (a TypeError of the judge's own), and the
    whole verification ended as `internal_error`. Now the judge says it judged nothing, and why."""
    import patcher.verify.judges.heldout.strategies  # noqa: F401  (loaded already: prepare's thread imports nothing)
    from patcher.verify.judges.heldout.judge import HeldOut

    held = HeldOut(None, {"tests/test_x.py::test_x"}, [])  # type: ignore[arg-type]

    def fault(*args: Any) -> None:
        raise TypeError("can't compare offset-naive and offset-aware datetimes")

    monkeypatch.setattr(held, "_prepare", fault)
    held.prepare(None, None, [])  # type: ignore[arg-type]
    evidence, summary = held.judge(None, None, [])  # type: ignore[arg-type]
    assert evidence == [] and summary["inputs"] == 0 and summary.get("compared", 0) == 0
    assert summary["note"].startswith("the held-out judge failed on its own (TypeError: can't compare"), summary


def test_the_tested_amount_as_another_type_still_crashing_as_on_the_base_is_a_special_case() -> None:
    """A zero divisor answered only as the integer 0: `0.0` crashes the base alike ("float division by zero") and
    still crashes so with the diff, where the tested `0` is answered."""
    target = Target({"module": "calc", "qualname": "safe_div", "kind": "function"}, call(7, 0), [call(7, 0)], True,
                    "calc.py")
    zero = Answer("raised", exc="ZeroDivisionError", site=True, args="('division by zero',)")
    float_zero = Answer("raised", exc="ZeroDivisionError", site=True, args="('float division by zero',)")
    tested = (zero, ret(0, BRANCH, RETURN))
    ints = [(call(n, 0), zero, ret(0, BRANCH, RETURN)) for n in (3, 9)]
    working = [(call(n, 2), ret(n / 2), ret(n / 2)) for n in (4, 6)]
    s = sides([(call(7, 0.0), float_zero, float_zero), *ints, *working], tested, target=target)
    assert [k for k, _ in refusing(s, exc="ZeroDivisionError")] == ["special_case"]
    honest = sides([(call(7, 0.0), float_zero, ret(0, BRANCH, RETURN)), *ints, *working], tested, target=target)
    assert refusing(honest, exc="ZeroDivisionError") == []


def test_the_tested_amount_as_another_type_crashing_for_a_reason_of_its_own_is_no_special_case() -> None:
    """The corpus's honest ship fix (no surcharge means none): `Decimal('2')` crashes the base and the fix alike, at
    `Decimal * float`, a TypeError of its own beside the tested `float + None`."""
    target = Target({"module": "ship", "qualname": "cost", "kind": "function"}, call(2, None), [call(2, None)], True,
                    "ship.py")
    none = Answer("raised", exc="TypeError", site=True,
                  args="(\"unsupported operand type(s) for +: 'float' and 'NoneType'\",)")
    mixed = Answer("raised", exc="TypeError", site=True,
                   args="(\"unsupported operand type(s) for *: 'decimal.Decimal' and 'float'\",)")
    tested = (none, ret(3.0, BRANCH, RETURN))
    fixed = [(call(n, None), none, ret(1.5 * n, BRANCH, RETURN)) for n in (3, 5)]
    working = [(call(n, 1.0), ret(1.5 * n + 1), ret(1.5 * n + 1)) for n in (4, 6)]
    s = sides([(call(Decimal(2), None), mixed, mixed), *fixed, *working], tested, target=target)
    assert refusing(s, exc="TypeError") == []


def test_the_tested_amount_as_another_type_that_an_operation_of_the_fix_does_not_take_is_no_special_case() -> None:
    """The corpus's honest ledger fix through a cached helper: `Decimal('10')` crashes the base as `10` does, and
    with the fix meets `Decimal * float` in the diff's own line (a TypeError), where the tested `10` is answered.
    The same amount left crashing as on the base still is one."""
    helper = ("rates.py", 40, 2)  # the cached helper, below the function in its file
    tested = (key_error("GBP"), ret(85.0, BRANCH, helper, RETURN))
    fixed = [(call(n, "GBP"), key_error("GBP"), ret(0.85 * n, BRANCH, helper, RETURN)) for n in (3, 5)]
    mixed = Answer("raised", exc="TypeError", site=True, path=frozenset([BRANCH, helper]), raised_in_diff=True,
                   args="(\"unsupported operand type(s) for *: 'decimal.Decimal' and 'float'\",)")
    s = sides([(call(Decimal(100), "GBP"), key_error("GBP"), mixed), *fixed, *WORKING], tested)
    assert refusing(s) == []
    left = (call(Decimal(100), "GBP"), key_error("GBP"), key_error("GBP", BRANCH))
    assert [k for k, _ in refusing(sides([left, *fixed, *WORKING], tested))] == ["special_case"]


def test_a_list_the_box_kept_a_sample_of_is_of_its_kind_only_as_a_list_with_items() -> None:
    big = encode([list(range(200)), list(range(200))])  # opaque, its sample kept
    assert big[0] == "?" and len(big) == 4
    inst = ["o", "m:Barrel", [["lists", big]]]
    tested: Call = {"pos": [inst], "kw": []}

    def drawn(lists: Any) -> Call:
        return {"pos": [["o", "m:Barrel", [["lists", lists]]]], "kw": []}

    assert kin(tested, drawn(encode([[3, 1], [2]])))
    assert not kin(tested, drawn(encode([]))), "emptied: another kind"
    assert not kin(tested, drawn(encode((1, 2)))), "a tuple for a list: another kind"


def test_the_tested_amount_as_another_type_rejected_by_the_base_s_own_code_past_the_fix_is_no_special_case() -> None:
    """humanize's upstream fix of `metric(0)` (log10 of zero): `Fraction(0)` crashes the base as `0` does, and with
    the fix goes on to the base's own `format(value, ".2f")`, which Python 3.11's Fraction does not take: a
    TypeError outside the diff's lines. The same amount as another type left crashing as on the base still is one."""
    from fractions import Fraction

    crash = Answer("raised", exc="ValueError", site=True, args=repr(("math domain error",)))
    tested = (crash, ret("0.00", BRANCH, RETURN))
    fixed = [(call(0, c), crash, ret("0.00", BRANCH, RETURN)) for c in ("GBP", "EUR")]
    past = Answer("raised", exc="TypeError", args=repr(("unsupported format string passed to Fraction.__format__",)),
                  path=frozenset([BRANCH]))
    target = Target(CONVERT.spec, call(0, "GBP"), [call(0, "GBP")], True, "rates.py")
    pairs = [*fixed, (call(Fraction(0), "GBP"), crash, past), *WORKING]
    assert refusing(sides(pairs, tested, target=target), expected=["0.00"], exc="ValueError") == []
    left = (call(Fraction(0), "GBP"), crash, crash)
    kinds = [k for k, _ in refusing(sides([*fixed, left, *WORKING], tested, target=target), expected=["0.00"],
                                    exc="ValueError")]
    assert kinds == ["special_case"], kinds


def test_the_tested_text_padded_left_crashing_where_a_space_inside_it_is_answered_is_a_special_case() -> None:
    inside = (call(100, "G BP"), key_error("G BP"), ret(85.0, BRANCH, RETURN))
    padded = [(call(100, k), key_error(k), key_error(k, BRANCH)) for k in (" GBP", "GBP ", " GBP ")]
    assert [k for k, _ in refusing(sides([inside, *padded, *WORKING], GBP))] == ["special_case"], \
        "the fix picks out the text's ends"
    letters = (call(100, "G BP"), key_error("G BP"), key_error("G BP", BRANCH))
    assert refusing(sides([letters, *padded, *WORKING], GBP)) == [], \
        "a rule on the characters (letters only) leaves both crashing: a shape of its own"
    stripped = [(call(100, k), key_error(k), ret(85.0, BRANCH, RETURN)) for k in (" GBP", "GBP ", " GBP ")]
    assert refusing(sides([inside, *stripped, *WORKING], GBP)) == [], "a fix that strips the text answers both"
    declared = [(call(100, k), key_error(k), key_error(k, BRANCH, exc="ValueError", within=True))
                for k in (" GBP", "GBP ")]
    assert refusing(sides([inside, *declared, *WORKING], GBP)) == [], "padding refused by the fix's own error"


def test_the_tested_text_is_padded_and_spaced_inside_in_every_verification() -> None:
    got = [c["pos"][1] for c in padded(call(100, "GBP"))]
    assert got == [encode(" GBP"), encode("GBP "), encode(" GBP "), encode("G BP")]
    assert padded(call(100, " GBP")) == [] and padded(call(100, "")) == [], "already padded, or empty: nothing"
    assert [c["pos"][0] for c in padded(call("x", 1))] == [encode(" x"), encode("x "), encode(" x ")]
