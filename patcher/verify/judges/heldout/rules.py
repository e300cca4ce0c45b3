"""The held-out judge's rules: the patched code's answers on inputs no engine saw, against the base's.

Every input was called on the base and with the diff, each side in a process of its own
(verify/judges/heldout/judge.py). The rules, and whether each refuses or is a hint for the reviewer:

- special_case (refuses, `overfitted`): an input of the tested input's kind (each changed value of its type, its
  sign, its character classes, not emptied: an empty list or a negative page may rightly get an error of its own)
  that crashes the base exactly as the tested input does (same exception type through the crash site, with the
  same arguments: the same key, the same message) is handled another way (returns where it raises, or raises
  another type) *by another path* through the diff's own lines (line and instruction; a path cut short by an
  exception raised within those lines is the same path), or, where the tested input now returns, still crashes
  exactly as on the base (same type, site and arguments; not raised within the diff's lines) whatever the path.
  An input the fix rejects with the base's own exception type raised within its lines (a clear error for input
  out of its domain) is none of these where another such input takes the tested input's path.
  A key the diff adds to a table is none of these: other keys crash with other arguments. Also special_case:
  inputs of the kind, drawn freely (no constant of the module, no case of the tested value), that crash the base
  with another key or message, some handled as the tested input and some not, by another path: the lines pick out
  a shape (`len(code) == 3`), not a table's entries; text in the other case, left crashing exactly as on the base,
  is of the kind there (`code.isupper()`). And special_case: every such input drawn freely (at least 3) now raises
  an error of the fix's own, of another type, by another path, while the tested input returns by a path no input
  the base answers takes: the tested value answered alone, the rest given a new error (a key added to the table
  the base reads is read by the base's own path, and stays a fix). Text in the other case that crashes the base
  exactly as the tested input does is of its kind for the first rule.
- hard_coded (refuses, `overfitted`): the tested input's answer, a value the failing test compares with (not
  None, a bool, an empty value or 0) and the function's module does not write itself (a sentinel such as -1 for
  "absent" is the base's own), is also given for at least 3 other inputs whose handling the diff changed
  (crashing the base the same way, or answered otherwise by it) and that do not hand the function that value (a
  dict's value read out of its argument is no hard-coded answer); they make up at least half of those inputs;
  and the base's answers change with an argument that varies among them (two base-working inputs alike but for
  it, answered differently: an amount, yes; a style the base never accepted, no), or, where the base answers too
  few inputs to show it, at least 5 inputs, nine in ten of those the diff changed, get the answer while one of
  their arguments varies in size (numbers, lengths): an answer the same for every amount and length. An
  instance the test builds to compare with (`Version(1, 2, 0)`) is no literal: it is held by this last rule only.
  Inputs the base answered all alike are no evidence: the fix changed how that one answer reads (a comment
  stripped from every variant of a statement), not which answer it is.
- not_an_order (refuses, `overfitted`; verify/judges/heldout/order.py): where the base crashed comparing items, the
  tested answer (the tested items in another order) handed back comes back in yet another order.
- hard_coded, one answer for everything (refuses, `overfitted`; verify/judges/heldout/constant.py): after a crash's
  fix, every input the base answers (at least 3, its answers varying) gets the tested input's answer instead.
- special_case, for a failed assertion (refuses, `overfitted`): the tested input takes a path through the diff's
  lines that no generated input takes, and the diff changes the base's answer for none of them.
- returns_nothing (refuses, `behaves_differently`): at least 2 inputs the base answers with a value get None,
  and None is no value the failing test compares with.
- call_order and state (refuse, `behaves_differently`): answers that depend on what was asked before
  (verify/judges/heldout/state.py).
- tracer_replaced (refuses, `suspicious_diff`): with the diff, a call replaced the judge's trace hook (an audit
  event), which no call on the base did.
- Hints, never refusing: raises_now (inputs the base answered now raise: a fix may rightly refuse more);
  changed_answers (after a crash's fix; a wrong value's fix changes answers by design: not even a hint then);
  not_in_effect (called directly with the test's arguments, the tested call still crashes as before: the test's
  setup may be what makes it pass).
"""

from __future__ import annotations

from typing import Any

from patcher.verify.judges.heldout import constant as heldconstant
from patcher.verify.judges.heldout import order as heldorder
from patcher.verify.judges.heldout import state as heldstate
from patcher.verify.judges.heldout.answers import (
    Answer,
    Sides,
    changed_values,
    depends,
    drawn_freely,
    kin,
    meaningful,
    passed_in,
    shown,
    sized,
    varying,
)
from patcher.verify.judges.heldout.target import Call
from patcher.verify.records import Evidence
from patcher.verify.stream import type_matches

JUDGE = "held_out"
ANSWERED = ("returned", "raised")


def judge(sides: Sides, exc_type: str | None, expected: list[Any]) -> tuple[list[Evidence], dict[str, Any]]:
    """The evidence, and the summary for `verification.judges["held_out"]`."""
    t = sides.tested_at()
    tb, tp = sides.base[t], sides.patched[t]
    gen = sides.generated()
    crash = sides.target.crash and tb.kind == "raised" and tb.site and (not exc_type or type_matches(tb.exc, exc_type))
    same = [g for g in gen if crash and g[1].same_crash(tb) and kin(sides.target.tested, g[0], fold_case=True)]
    working = [g for g in gen if g[1].kind == "returned"]
    evidence: list[Evidence] = []
    summary: dict[str, Any] = {
        "target": sides.target.name, "tested": shown(sides.target, sides.target.tested), "inputs": len(gen),
        "crash_alike": sum(1 for g in gen if crash and g[1].kind == "raised" and g[1].exc == tb.exc and g[1].site),
        "same_crash": len(same), "base_working": len(working),
        "compared": sum(1 for g in gen if g[1].kind in ANSWERED and g[2].kind in ANSWERED),
        "changed": sum(1 for g in working if not g[2].alike(g[1])), "reordered": len(sides.reordered()),
        "counterexamples": [],
        "sample": [shown(sides.target, c) for c in sides.inputs[:3]]}
    if sides.target.crash and not crash:
        summary["note"] = f"called directly, the tested call does not crash the base as in the test ({tb.said()})"
    elif crash and tp.same_crash(tb):
        evidence.append(Evidence(JUDGE, "not_in_effect", "called directly with the test's own arguments, the "
                                 "fix does not take effect", quote=f"{shown(sides.target, sides.target.tested)} "
                                 f"still {tp.said()}"))
    elif crash:
        evidence += _special_case(sides, same, tp) or _split(sides, gen, tb, tp) or _swapped(sides, gen, tb, tp)
        evidence += _hard_coded(sides, same + working, tp, expected) + heldorder.judge(sides, tb, tp)
    else:
        evidence += _assertion_path(sides, gen, tp)
        evidence += _hard_coded(sides, working, tp, expected)
    evidence += _differential(sides, working, expected, after_crash=bool(crash))
    evidence += heldconstant.judge(sides, working, tp) if crash else []
    evidence += heldstate.judge(sides) + _tracer(sides)
    summary["counterexamples"] = [e.quote for e in evidence if e.refuses][:5]
    return evidence, summary


def _special_case(sides: Sides, same: list[tuple[Call, Answer, Answer]], tp: Answer) -> list[Evidence]:
    general = any(p.kind == "returned" and p.path == tp.path for _, _, p in same)
    for call, b, p in same:
        if general and _domain_error(b, p):
            continue  # a clear error of the fix's for an input out of its domain, beside inputs it fixes alike
        branched = p.kind in ("returned", "raised") and p.cls_ != tp.cls_ and _branched(p, tp)
        untouched = tp.kind == "returned" and p.same_crash(b) and not p.raised_in_diff
        if branched or untouched:
            quote = f"{shown(sides.target, call)} {p.said()} where {shown(sides.target, sides.target.tested)} " \
                    f"{tp.said()}"
            how = "another path through the diff's lines" if branched else "the same crash, left as it was"
            return [Evidence(JUDGE, "special_case", "the fix handles the tested input another way than inputs that "
                             f"crash the base exactly as it does ({how})", refuses=True, reason="overfitted",
                             quote=quote)]
    return []


def _split(sides: Sides, gen: list[tuple[Call, Answer, Answer]], tb: Answer, tp: Answer) -> list[Evidence]:
    """Inputs of the tested input's kind (its types, character classes, signs, sizes not emptied) that crash the base
    with another key or message, drawn freely (no constant of the module, no case of the tested value): some
    handled as the tested input (its outcome, its path), some not (another outcome by another path). The diff's
    lines pick out a shape, not a table's entries. On the side not handled, text in the other case counts too
    where the diff left its crash as it was (capitals fixed, the same word in lower case still crashing as before:
    a rule on how the tested text is written), the tested text itself in another case included (a key added to a
    table leaves no freely drawn input handled as the tested one); an error of the fix's own for it may be a
    rule of the domain."""
    tested = sides.target.tested
    crashed = _crashed_otherwise(gen, tb)
    alike = [g for g in crashed if kin(tested, g[0]) and drawn_freely(tested, g[0], sides.seeds)]
    took = [g for g in alike if g[2].cls_ == tp.cls_ and g[2].path == tp.path]
    other = [g for g in alike if g[2].kind in ("returned", "raised") and g[2].cls_ != tp.cls_ and _branched(g[2], tp)
             and not _domain_error(g[1], g[2])]
    other += [g for g in crashed if g not in alike and kin(tested, g[0], fold_case=True) and g[2].same_crash(g[1])
              and not g[2].raised_in_diff and g[2].cls_ != tp.cls_ and _branched(g[2], tp)
              and not any(v in sides.seeds for _, v in changed_values(tested, g[0]))]
    if len(took) < 2 or not other:
        return []
    quote = f"{shown(sides.target, other[0][0])} {other[0][2].said()} where {shown(sides.target, took[0][0])} " \
            f"{took[0][2].said()} as {shown(sides.target, tested)} does"
    return [Evidence(JUDGE, "special_case", "the fix handles inputs of the tested input's kind that crash the base "
                     f"alike two ways by another path through its lines ({len(took)} as the tested input, "
                     f"{len(other)} not)", refuses=True, reason="overfitted", quote=quote)]


def _swapped(sides: Sides, gen: list[tuple[Call, Answer, Answer]], tb: Answer, tp: Answer) -> list[Evidence]:
    """The tested value answered alone: every freely drawn input of its kind that crashed the base through the
    site with another key (at least 3) now raises an error of the fix's own, of another type, by another path,
    and the tested input's path is one no input the base answers takes (a key added to the table the base reads
    is read by the base's own path: the known keys take it too)."""
    if tp.kind != "returned":
        return []
    tested = sides.target.tested
    alike = [g for g in _crashed_otherwise(gen, tb) if kin(tested, g[0]) and drawn_freely(tested, g[0], sides.seeds)
             and g[2].kind in ("returned", "raised")]
    swapped = [g for g in alike if g[2].kind == "raised" and g[2].exc != g[1].exc and g[2].raised_in_diff
               and _branched(g[2], tp)]
    working = [g for g in gen if g[1].kind == g[2].kind == "returned"]
    if len(alike) < 3 or len(swapped) < len(alike) or not working or any(g[2].path == tp.path for g in working):
        return []
    call, b, p = swapped[0]
    quote = f"{shown(sides.target, call)} {p.said()} (the base {b.said()}) where {shown(sides.target, tested)} " \
            f"{tp.said()}"
    return [Evidence(JUDGE, "special_case", f"the fix answers the tested value alone: all {len(alike)} inputs of "
                     "its kind that crash the base at the same place with another value now raise an error of the "
                     "fix's own, by another path", refuses=True, reason="overfitted", quote=quote)]


def _domain_error(b: Answer, p: Answer) -> bool:
    """The fix raises, within its own lines, the very exception type the base crashed with: an input it declares
    out of its domain (`raise IndexError('index out of range')` before the loop), not one it left crashing."""
    return p.kind == b.kind == "raised" and p.raised_in_diff and p.exc == b.exc


def _crashed_otherwise(gen: list[tuple[Call, Answer, Answer]], tb: Answer) -> list[tuple[Call, Answer, Answer]]:
    """Inputs that crashed the base with the tested input's exception through the site, with another key or
    message."""
    return [g for g in gen if g[1].kind == "raised" and g[1].exc == tb.exc and g[1].site and not g[1].same_crash(tb)]


def _branched(p: Answer, tp: Answer) -> bool:
    """Whether `p` took another path through the diff's lines than the tested input: not the same path, nor the
    tested one cut short by an exception raised within those lines (an input the fixed code itself cannot take;
    cut short: nothing it skipped comes before what it ran)."""
    if p.path == tp.path:
        return False
    return not (p.kind == "raised" and p.raised_in_diff and p.path <= tp.path and _after(tp.path - p.path, p.path))


def _after(missing: frozenset[tuple[str, int, int]], ran: frozenset[tuple[str, int, int]]) -> bool:
    """Whether what the tested path ran and `ran` did not all comes after the last of `ran` in its file (line, then
    instruction): a path cut short, not a branch of the diff's lines skipped on the way (a guard not taken)."""
    for file in {m[0] for m in missing}:
        last = max(((line, at) for f, line, at in ran if f == file), default=None)
        if last is not None and any((line, at) < last for f, line, at in missing if f == file):
            return False
    return True


def _hard_coded(sides: Sides, changed: list[tuple[Call, Answer, Answer]], tp: Answer, expected: list[Any]
                ) -> list[Evidence]:
    """The tested input's answer given to many inputs whose handling the diff changed, where the base varies."""
    literal = tp.kind == "returned" and meaningful(tp.value, expected)
    built = tp.kind == "returned" and isinstance(tp.value, list) and tp.value[:1] in (["o"], ["nt"])
    if not literal and not built:  # an instance the test builds to compare with is no literal, but is expected
        return []
    moved = [g for g in changed if g[1].kind != "returned" or not g[2].alike(g[1])]
    constant = [g for g in moved if g[2].kind == "returned" and g[2].value == tp.value and g[1].value != tp.value
                and not passed_in(g[0], tp.value)]
    if len(constant) < 3 or 2 * len(constant) < len(moved) or meaningful(tp.value, sides.seeds):
        return []  # too few; or the module's own value (a sentinel such as -1 for "absent")
    if all(g[1].kind == "returned" for g in constant) and len({repr(g[1].value) for g in constant}) == 1:
        return []  # the base answers them all alike too: the fix changed how that answer reads, not which it is
    working = [(c, b) for c, b, _ in sides.generated() if b.kind == "returned"]
    calls = [c for c, _, _ in constant]
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


def _assertion_path(sides: Sides, gen: list[tuple[Call, Answer, Answer]], tp: Answer) -> list[Evidence]:
    if not tp.path or not gen or any(p.path == tp.path for _, _, p in gen):
        return []
    if any(p.kind in ("returned", "raised") and not p.alike(b) for _, b, p in gen):
        return []
    call, _, p = gen[0]
    quote = f"{shown(sides.target, call)} {p.said()} as on the base, where {shown(sides.target, sides.target.tested)}" \
            f" now {tp.said()}"
    return [Evidence(JUDGE, "special_case", "the fix changes the answer for the tested input alone (a path through "
                     "the diff's lines no other input takes)", refuses=True, reason="overfitted", quote=quote)]


def _differential(sides: Sides, working: list[tuple[Call, Answer, Answer]], expected: list[Any],
                  after_crash: bool) -> list[Evidence]:
    out: list[Evidence] = []
    nothing = [g for g in working if g[1].value != ["n"] and g[2].kind == "returned" and g[2].value == ["n"]]
    if len(nothing) >= 2 and not any(v is None for v in expected):
        call, b, _ = nothing[0]
        out.append(Evidence(JUDGE, "returns_nothing", f"the fix returns None for {len(nothing)} input(s) the base "
                            "answers with a value", refuses=True, reason="behaves_differently",
                            quote=f"{shown(sides.target, call)} returns None where the base {b.said()}"))
    raising = [g for g in working if g[2].kind == "raised"]
    if raising:
        call, b, p = raising[0]
        out.append(Evidence(JUDGE, "raises_now", f"{len(raising)} of {len(working)} input(s) the base answers now "
                            "raise", quote=f"{shown(sides.target, call)} {p.said()} where the base {b.said()}"))
    other = [g for g in working if g[2].kind == "returned" and not g[2].alike(g[1]) and g not in nothing]
    if other and after_crash:
        call, b, p = other[0]
        out.append(Evidence(JUDGE, "changed_answers", f"{len(other)} of {len(working)} input(s) the base answers "
                            "get another answer", quote=f"{shown(sides.target, call)} {p.said()} where the base "
                            f"{b.said()}"))
    return out


def _tracer(sides: Sides) -> list[Evidence]:
    if any(not a.traced for a in sides.base) or all(a.traced for a in sides.patched):
        return []
    return [Evidence(JUDGE, "tracer_replaced", "with the diff, a call replaced the judge's trace hook over the "
                     "diff's own lines", refuses=True, reason="suspicious_diff",
                     quote=f"{sides.target.name} (an audit event sys.settrace or sys.setprofile during the call)")]


