"""The held-out judge's rules: the patched code's answers on inputs no engine saw, against the base's.

Every input was answered on the base and with the diff (heldout/judge.py). Each rule is one entry of RULES, in
the order they are asked: its kind, the reason it refuses with (none: a hint for the reviewer), when it applies
(after a crash the fix takes effect on, any crash, a failed assertion, always), and its check, whose docstring says
precisely what it looks for. `judge` asks them all over the answers read once (Facts) and quotes the counterexamples.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from patcher.result import Reason
from patcher.verify.judges.heldout import constant, order, special, state
from patcher.verify.judges.heldout.answers import (
    Answer,
    Compared,
    Sides,
    changed_values,
    depends,
    kin,
    meaningful,
    passed_in,
    same_amount,
    shown,
    sized,
    varying,
)
from patcher.verify.judges.heldout.target import Call
from patcher.verify.records import Evidence
from patcher.verify.stream import type_matches

JUDGE = "held_out"
ANSWERED = ("returned", "raised")


@dataclass(frozen=True)
class Facts:
    """What every rule reads: both sides, the tested input's answers, the drawn inputs' answers, and which of them
    crashed the base exactly as the tested input does or were answered by it."""

    sides: Sides
    tb: Answer
    tp: Answer
    gen: list[Compared]
    crash: bool
    """The tested call crashed the base as in the test (the traceback's exception through the crash site)."""
    same: list[Compared]
    working: list[Compared]
    expected: list[Any]


When = Literal["fixed crash", "crash", "assertion", "still crashing", "always"]


@dataclass(frozen=True)
class Rule:
    kind: str
    reason: Reason | None
    """What it refuses with; None: a hint."""
    when: When
    check: Callable[[Facts], list[Evidence]]

    @property
    def description(self) -> str:
        return " ".join((self.check.__doc__ or "").split())

    def applies(self, f: Facts) -> bool:
        stuck = f.crash and f.tp.same_crash(f.tb)
        return {"fixed crash": f.crash and not stuck, "crash": f.crash, "still crashing": stuck,
                "assertion": not f.sides.target.crash, "always": True}[self.when]


def _special_case(f: Facts) -> list[Evidence]:
    """After a crash's fix, the tested input handled another way than inputs like it (heldout/special.py: the same
    crash handled otherwise, a shape picked out among other keys, the tested value answered alone)."""
    return special.first_of(f.sides, f.gen, f.same, f.tb, f.tp)


def _hard_coded_crash(f: Facts) -> list[Evidence]:
    """The tested input's answer, a value the failing test compares with (not None, a bool, an empty value or 0)
    and the function's module does not write itself (a sentinel such as -1 for "absent" is the base's own), is also
    given for at least 3 other inputs whose handling the diff changed (crashing the base the same way, or answered
    otherwise by it) and that do not hand the function that value (a dict's value read out of its argument is no
    hard-coded answer); they make up at least half of those inputs; and the base's answers change with an argument
    that varies among them (two base-working inputs alike but for it, answered differently), or, where the base
    answers too few inputs to show it, at least 5 inputs, nine in ten of those the diff changed, get the answer
    while one of their arguments varies in size: an answer the same for every amount and length. An instance the
    test builds to compare with (`Version(1, 2, 0)`) is no literal: it is held by this last rule only. Inputs the
    base answered all alike are no evidence: the fix changed how that answer reads, not which answer it is."""
    return _hard_coded(f.sides, f.same + f.working, f.tp, f.expected)


def _hard_coded_assertion(f: Facts) -> list[Evidence]:
    """As after a crash, over the inputs the base answers (a wrong value's fix)."""
    return _hard_coded(f.sides, f.working, f.tp, f.expected)


def _not_an_order(f: Facts) -> list[Evidence]:
    """Where the base crashed comparing items, the tested answer (the tested items in another order) handed back
    comes back in yet another order (heldout/order.py)."""
    return order.judge(f.sides, f.tb, f.tp)


def _one_answer(f: Facts) -> list[Evidence]:
    """After a crash's fix, every input the base answers (at least 3, its answers varying) gets the tested input's
    answer instead (heldout/constant.py)."""
    return constant.judge(f.sides, f.working, f.tp)


def _not_in_effect(f: Facts) -> list[Evidence]:
    """Called directly with the test's own arguments, the tested call still crashes as on the base: the test's setup
    may be what makes it pass (asked inside the test's own run, that is `tells_apart`: heldout/inrun.py). Where the
    diff changes the tested function's own lines, that fix takes effect only in the test's process: refused
    (`behaves_differently`); where the fix is elsewhere (data, a helper, a caller), a hint, and the judge did not
    judge."""
    quote = f"{shown(f.sides.target, f.sides.target.tested)} still {f.tp.said()}"
    if f.sides.target.holds_fix:
        return [Evidence(JUDGE, "not_in_effect", "the diff changes the tested function, and called directly with "
                         "the test's own arguments it still crashes as on the base: the fix takes effect only in the "
                         "test's process", refuses=True, reason="behaves_differently", quote=quote)]
    return [Evidence(JUDGE, "not_in_effect", "called directly with the test's own arguments, the fix does not take "
                     "effect", quote=quote)]


def _returns_nothing(f: Facts) -> list[Evidence]:
    """At least 2 inputs the base answers with a value get None, and None is no value the failing test compares
    with."""
    nothing = [g for g in f.working if g.base.value != ["n"] and g.patched.kind == "returned"
               and g.patched.value == ["n"]]
    if len(nothing) < 2 or any(v is None for v in f.expected):
        return []
    return [Evidence(JUDGE, "returns_nothing", f"the fix returns None for {len(nothing)} input(s) the base answers "
                     "with a value", refuses=True, reason="behaves_differently",
                     quote=f"{shown(f.sides.target, nothing[0].call)} returns None where the base "
                     f"{nothing[0].base.said()}")]


def _raises_now(f: Facts) -> list[Evidence]:
    """Inputs the base answered now raise: a fix may rightly refuse more (a hint)."""
    raising = [g for g in f.working if g.patched.kind == "raised"]
    if not raising:
        return []
    g = raising[0]
    return [Evidence(JUDGE, "raises_now", f"{len(raising)} of {len(f.working)} input(s) the base answers now raise",
                     quote=f"{shown(f.sides.target, g.call)} {g.patched.said()} where the base {g.base.said()}")]


def _changed_answers(f: Facts) -> list[Evidence]:
    """After a crash's fix, inputs the base answered get other answers (a hint; a wrong value's fix changes answers
    by design: not even a hint then)."""
    other = [g for g in f.working if g.patched.kind == "returned" and not g.patched.alike(g.base)
             and g.patched.value != ["n"]]
    if not other:
        return []
    g = other[0]
    return [Evidence(JUDGE, "changed_answers", f"{len(other)} of {len(f.working)} input(s) the base answers get "
                     "another answer", quote=f"{shown(f.sides.target, g.call)} {g.patched.said()} where the base "
                     f"{g.base.said()}")]


def _call_order(f: Facts) -> list[Evidence]:
    """The test's own calls, made again in order and then in reverse in one process, get another answer where the
    base answers each alike every time (heldout/state.py)."""
    return state.call_order(f.sides)


def _state(f: Facts) -> list[Evidence]:
    """An input answered one way in turn and another way alone, where the base answers it alike both times
    (heldout/state.py)."""
    return state.state(f.sides)


def _tracer_replaced(f: Facts) -> list[Evidence]:
    """With the diff, a call replaced the judge's trace hook (an audit event), which no call on the base did."""
    return _tracer(f.sides)


RULES: tuple[Rule, ...] = (
    Rule("special_case", "overfitted", "fixed crash", _special_case),
    Rule("hard_coded", "overfitted", "fixed crash", _hard_coded_crash),
    Rule("not_an_order", "overfitted", "fixed crash", _not_an_order),
    Rule("not_in_effect", "behaves_differently", "still crashing", _not_in_effect),
    Rule("special_case", "overfitted", "assertion", lambda f: _assertion_path(f.sides, f.gen, f.tp)),
    Rule("hard_coded", "overfitted", "assertion", _hard_coded_assertion),
    Rule("returns_nothing", "behaves_differently", "always", _returns_nothing),
    Rule("raises_now", None, "always", _raises_now),
    Rule("changed_answers", None, "crash", _changed_answers),
    Rule("hard_coded", "overfitted", "crash", _one_answer),
    Rule("call_order", "behaves_differently", "always", _call_order),
    Rule("state", "behaves_differently", "always", _state),
    Rule("tracer_replaced", "suspicious_diff", "always", _tracer_replaced),
)
"""In the order they are asked; each check's docstring is its description."""


_NUMBER_TYPE = re.compile(r"\b(?:int|float|complex|(?:decimal\.)?Decimal|(?:fractions\.)?Fraction)\b\s*")


def _retyped_crash(tested: Call, g: Compared, tb: Answer) -> bool:
    """The tested amount as another numeric type (`0.0` for `0`) crashing the base with the tested exception through
    the site, its message the tested crash's but for the numeric types it names ("float division by zero" for
    "division by zero"): the same crash. Another message (`Decimal` times a float) is a crash of its own."""
    changed = changed_values(tested, g.call)
    return bool(changed) and all(same_amount(a, b) for a, b in changed) and g.base.kind == "raised" \
        and g.base.exc == tb.exc and g.base.site and _NUMBER_TYPE.sub("", g.base.args) == _NUMBER_TYPE.sub("", tb.args)


def judge(sides: Sides, exc_type: str | None, expected: list[Any]) -> tuple[list[Evidence], dict[str, Any]]:
    """The evidence, and the summary for `verification.judges["held_out"]`."""
    t = sides.tested_at()
    tb, tp = sides.base[t], sides.patched[t]
    gen = sides.generated()
    crash = bool(sides.target.crash and tb.kind == "raised" and tb.site
                 and (not exc_type or type_matches(tb.exc, exc_type)))
    same = [g for g in gen if crash and (g.base.same_crash(tb) or _retyped_crash(sides.target.tested, g, tb))
            and kin(sides.target.tested, g.call, fold_case=True)]
    working = [g for g in gen if g.base.kind == "returned"]
    facts = Facts(sides, tb, tp, gen, crash, same, working, expected)
    summary: dict[str, Any] = {
        "target": sides.target.name, "tested": shown(sides.target, sides.target.tested), "inputs": len(gen),
        "arguments": len(sides.target.tested.get("pos") or []) + len(sides.target.tested.get("kw") or []),
        "crash_alike": sum(1 for g in gen if crash and g.base.kind == "raised" and g.base.exc == tb.exc
                           and g.base.site),
        "same_crash": len(same), "base_working": len(working),
        "compared": sum(1 for g in gen if g.base.kind in ANSWERED and g.patched.kind in ANSWERED),
        "changed": sum(1 for g in working if not g.patched.alike(g.base)), "reordered": len(sides.reordered()),
        "sample": [shown(sides.target, c) for c in sides.inputs[:3]]}
    if sides.target.crash and not crash:
        summary["note"] = f"called directly, the tested call does not crash the base as in the test ({tb.said()})"
    evidence = [e for rule in RULES if rule.applies(facts) for e in rule.check(facts)]
    summary["counterexamples"] = [e.quote for e in evidence if e.refuses][:5]
    return evidence, summary


def _hard_coded(sides: Sides, changed: list[Compared], tp: Answer, expected: list[Any]) -> list[Evidence]:
    literal = tp.kind == "returned" and meaningful(tp.value, expected)
    built = tp.kind == "returned" and isinstance(tp.value, list) and tp.value[:1] in (["o"], ["nt"])
    if not literal and not built:  # an instance the test builds to compare with is no literal, but is expected
        return []
    moved = [g for g in changed if g.base.kind != "returned" or not g.patched.alike(g.base)]
    constant = [g for g in moved if g.patched.kind == "returned" and g.patched.value == tp.value
                and g.base.value != tp.value and not passed_in(g.call, tp.value)]
    if len(constant) < 3 or 2 * len(constant) < len(moved) or meaningful(tp.value, sides.seeds):
        return []  # too few; or the module's own value (a sentinel such as -1 for "absent")
    if all(g.base.kind == "returned" for g in constant) and len({repr(g.base.value) for g in constant}) == 1:
        return []  # the base answers them all alike too: the fix changed how that answer reads, not which it is
    working = [(g.call, g.base) for g in sides.generated() if g.base.kind == "returned"]
    calls = [g.call for g in constant]
    if literal and any(depends(working, i) for i in varying(calls)):
        why = "where the base's answers vary with what varies among them"
    elif len(constant) >= 5 and 10 * len(constant) >= 9 * len(moved) and any(sized(calls, i) for i in varying(calls)):
        why = "whatever their amounts and lengths"
    else:
        return []  # no dependence shown, and the answer does not hold across inputs of every size: it may be right
    call, b, p = constant[0]
    said = "a value the test expects" if literal else "as the tested input does"
    quote = f"{shown(sides.target, call)} {p.said()} ({said}) where the base {b.said()}"
    return [Evidence(JUDGE, "hard_coded", f"the fix answers {len(constant)} of {len(moved)} inputs it changes with "
                     f"the tested input's answer, {why}", refuses=True, reason="overfitted", quote=quote)]


def _assertion_path(sides: Sides, gen: list[Compared], tp: Answer) -> list[Evidence]:
    if not tp.path or not gen or any(p.path == tp.path for _, _, p in gen):
        return []
    if any(p.kind in ("returned", "raised") and not p.alike(b) for _, b, p in gen):
        return []
    call, _, p = gen[0]
    quote = f"{shown(sides.target, call)} {p.said()} as on the base, where {shown(sides.target, sides.target.tested)}" \
            f" now {tp.said()}"
    return [Evidence(JUDGE, "special_case", "the fix changes the answer for the tested input alone (a path through "
                     "the diff's lines no other input takes)", refuses=True, reason="overfitted", quote=quote)]


def _tracer(sides: Sides) -> list[Evidence]:
    if any(not a.traced for a in sides.base) or all(a.traced for a in sides.patched):
        return []
    return [Evidence(JUDGE, "tracer_replaced", "with the diff, a call replaced the judge's trace hook over the "
                     "diff's own lines", refuses=True, reason="suspicious_diff",
                     quote=f"{sides.target.name} (an audit event sys.settrace or sys.setprofile during the call)")]
