"""The held-out rule `special_case` after a crash (`overfitted`): the fix handles the tested input another way than
inputs like it. Four ways to show it, tried in this order, the first that shows it the evidence (rules.py lists
them as one rule): `same_crash`, `split`, `swapped` and `padding`, each described on its function.
"""

from __future__ import annotations

from collections.abc import Callable

from patcher.verify.judges.heldout.answers import (
    Answer,
    Compared,
    Sides,
    changed_values,
    drawn_freely,
    kin,
    same_amount,
    shown,
)
from patcher.verify.judges.heldout.target import Call
from patcher.verify.records import Evidence

JUDGE = "held_out"
Check = Callable[[Sides, list[Compared], list[Compared], Answer, Answer], list[Evidence]]


def first_of(sides: Sides, gen: list[Compared], same: list[Compared], tb: Answer, tp: Answer) -> list[Evidence]:
    """The first of same_crash, split, swapped and padding that shows a special case."""
    for check in (same_crash, split, swapped, padding):
        found = check(sides, gen, same, tb, tp)
        if found:
            return found
    return []


def same_crash(sides: Sides, gen: list[Compared], same: list[Compared], tb: Answer, tp: Answer) -> list[Evidence]:
    """An input of the tested input's kind (each changed value of its type, its sign, its character classes, not
    emptied: an empty list or a negative page may rightly get an error of its own) that crashes the base exactly as
    the tested input does (same exception type through the crash site, with the same arguments: the same key, the
    same message) is handled another way (returns where it raises, or raises another type) *by another path*
    through the diff's own lines (line and instruction; a path cut short by an exception raised within those lines
    is the same path), or, where the tested input now returns, still crashes exactly as on the base (same type,
    site and arguments; not raised within the diff's lines) whatever the path. Text in the other case that crashes
    the base exactly as the tested input does is of its kind. An input the fix rejects with the base crash's own
    exception type raised within its lines (a clear error for input out of its domain), or with an error the base
    itself raises for other inputs, with the same message, of another type than the crash (a check of the base's
    that the fix lets inputs reach: more-itertools' `IndexError('index out of range')` where the base raised
    ValueError), or answered where the tested input is so rejected, is none of these where another input is
    answered as the tested one by its path (a new type of error for the rest of the tested value's inputs is no
    rule of the domain: it singles the tested value out). The tested amount as another numeric type that the base's
    own code rejects past the fix with another exception type (not raised within the diff's lines), or that an
    operation in the fix's lines does not take (a TypeError: `Decimal * float`), is none of these either: that
    type's own limit, as for its other amounts. A key the diff adds to a
    table is none of these: other keys crash with other arguments."""
    tested, ruled = sides.target.tested, _ruled(gen, tb)  # another input the diff answers by the tested input's path
    general = any(g.patched.kind == tp.kind and g.patched.cls_ == tp.cls_ and g.patched.path == tp.path
                  and g.call != tested for g in gen)
    for call, b, p in same:
        if general and ((_declared(p, b, ruled, b.exc) and not p.same_crash(b))  # the base's own crash, in a
                        or _declared(tp, tb, ruled, tb.exc)):  # line the diff rewrote, is no error of the fix's
            continue  # a clear error of the fix's for an input out of its domain, beside inputs it fixes alike
        if p.kind == "raised" and p.exc != b.exc and _retyped(tested, call) \
                and (not p.raised_in_diff or p.exc == "TypeError"):
            continue  # the tested amount as another type, rejected by the base's own code past the fix (Python
            # 3.11's Fraction takes no format spec) or by an operation of the fix's that its type does not take
            # (`Decimal * float`): that type's own limit, as for its other amounts
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


def split(sides: Sides, gen: list[Compared], same: list[Compared], tb: Answer, tp: Answer) -> list[Evidence]:
    """Inputs of the tested input's kind (its types, character classes, signs, sizes not emptied) that crash the base
    with another key or message, drawn freely (no constant of the module, no case of the tested value): some
    handled as the tested input (its outcome, its path), some not (another outcome by another path). The diff's
    lines pick out a shape, not a table's entries. On the side not handled, text in the other case counts too
    where the diff left its crash as it was (capitals fixed, the same word in lower case still crashing as before:
    a rule on how the tested text is written), the tested text itself in another case included (a key added to a
    table leaves no freely drawn input handled as the tested one); an error the fix raises within its own lines
    is a rule of the domain it declares (a code that is not three letters), whatever its type, beside two or more
    inputs it handles as the tested one (where it handles none but the tested, `swapped` judges)."""
    tested = sides.target.tested
    crashed = _crashed_otherwise(gen, tb)
    alike = [g for g in crashed if kin(tested, g.call) and drawn_freely(tested, g.call, sides.seeds)]
    took = [g for g in alike if g.patched.cls_ == tp.cls_ and g.patched.path == tp.path]
    ruled = _ruled(gen, tb)
    other = [g for g in alike if g.patched.kind in ("returned", "raised") and g.patched.cls_ != tp.cls_
             and _branched(g.patched, tp) and not _declared(g.patched, g.base, ruled)]
    other += [g for g in crashed if g not in alike and kin(tested, g.call, fold_case=True)
              and g.patched.same_crash(g.base) and not g.patched.raised_in_diff and g.patched.cls_ != tp.cls_
              and _branched(g.patched, tp) and not any(v in sides.seeds for _, v in changed_values(tested, g.call))]
    if len(took) < 2 or not other:
        return []
    first, like = other[0], took[0]
    quote = f"{shown(sides.target, first.call)} {first.patched.said()} where {shown(sides.target, like.call)} " \
            f"{like.patched.said()} as {shown(sides.target, tested)} does"
    return [Evidence(JUDGE, "special_case", "the fix handles inputs of the tested input's kind that crash the base "
                     f"alike two ways by another path through its lines ({len(took)} as the tested input, "
                     f"{len(other)} not)", refuses=True, reason="overfitted", quote=quote)]


def swapped(sides: Sides, gen: list[Compared], same: list[Compared], tb: Answer, tp: Answer) -> list[Evidence]:
    """The tested value answered alone: every freely drawn input of its kind that crashed the base through the
    site with another key (at least 3) now raises an error of the fix's own, of another type, by another path,
    and the tested input's path is one no input the base answers takes (a key added to the table the base reads
    is read by the base's own path: the known keys take it too)."""
    if tp.kind != "returned":
        return []
    tested = sides.target.tested
    alike = [g for g in _crashed_otherwise(gen, tb) if kin(tested, g.call)
             and drawn_freely(tested, g.call, sides.seeds) and g.patched.kind in ("returned", "raised")]
    raising = [g for g in alike if g.patched.kind == "raised" and g.patched.exc != g.base.exc
               and g.patched.raised_in_diff and _branched(g.patched, tp)]
    working = [g for g in gen if g.base.kind == g.patched.kind == "returned"]
    if len(alike) < 3 or len(raising) < len(alike) or not working or any(g.patched.path == tp.path for g in working):
        return []
    call, b, p = raising[0]
    quote = f"{shown(sides.target, call)} {p.said()} (the base {b.said()}) where {shown(sides.target, tested)} " \
            f"{tp.said()}"
    return [Evidence(JUDGE, "special_case", f"the fix answers the tested value alone: all {len(alike)} inputs of "
                     "its kind that crash the base at the same place with another value now raise an error of the "
                     "fix's own, by another path", refuses=True, reason="overfitted", quote=quote)]


def padding(sides: Sides, gen: list[Compared], same: list[Compared], tb: Answer, tp: Answer) -> list[Evidence]:
    """The tested text padded with a space (heldout/dimensions.py `padded`) still crashing exactly as on the base
    (not raised within the diff's lines), where the same characters with the space inside them instead crash the
    base alike and are answered as the tested input, by its path: the fix singles out the text's ends, a rule on
    how the tested text was written. A fix that strips the text handles both; one that takes letters only (or
    any other rule on the characters) handles neither: no special case."""
    if tp.kind != "returned":
        return []
    tested = sides.target.tested
    crashed = [g for g in gen if g.base.kind == "raised" and g.base.exc == tb.exc and g.base.site]
    left = [g for g in crashed if _spaced(tested, g.call, inside=False) and g.patched.same_crash(g.base)
            and not g.patched.raised_in_diff]
    taken = [g for g in crashed if _spaced(tested, g.call, inside=True) and g.patched.cls_ == tp.cls_
             and g.patched.path == tp.path]
    if not left or not taken:
        return []
    quote = f"{shown(sides.target, left[0].call)} {left[0].patched.said()} as on the base, where " \
            f"{shown(sides.target, taken[0].call)} {taken[0].patched.said()} as {shown(sides.target, tested)} does"
    return [Evidence(JUDGE, "special_case", "the fix answers the tested text with a space inside it as the tested "
                     "one, and leaves it padded with a space crashing as on the base", refuses=True,
                     reason="overfitted", quote=quote)]


def _spaced(tested: Call, call: Call, inside: bool) -> bool:
    """The input changes one value, the tested text, only by a space: inside it (`inside`), or padding it."""
    changed = changed_values(tested, call)
    if len(changed) != 1 or not all(isinstance(v, str) for v in changed[0]):
        return False
    a, b = changed[0]
    if inside:
        return b == b.strip() and b != a and b.replace(" ", "", 1) == a
    return b != a and b.strip() == a


def _retyped(tested: Call, call: Call) -> bool:
    """Every value the input changes is the tested amount as another numeric type (`0` as `Fraction(0)`)."""
    changed = changed_values(tested, call)
    return bool(changed) and all(same_amount(a, b) for a, b in changed)


def _declared(p: Answer, b: Answer, ruled: set[tuple[str, str]], of: str = "") -> bool:
    """The fix rejects the input with an exception raised within its own lines (of the type `of`, where given), or
    with one the base raises for other inputs (`ruled`): a rule of its domain, declared, never the base's crash left
    as it was."""
    return p.kind == "raised" and ((p.raised_in_diff and p.exc == (of or p.exc))
                                   or ((p.exc, p.args) in ruled and not p.same_crash(b)))


def _ruled(gen: list[Compared], tb: Answer) -> set[tuple[str, str]]:
    """The errors the base raises for inputs, with their messages, of another type than the tested crash."""
    return {(g.base.exc, g.base.args) for g in gen if g.base.kind == "raised" and g.base.exc != tb.exc}


def _crashed_otherwise(gen: list[Compared], tb: Answer) -> list[Compared]:
    """Inputs that crashed the base with the tested input's exception through the site, with another key or
    message."""
    return [g for g in gen if g.base.kind == "raised" and g.base.exc == tb.exc and g.base.site
            and not g.base.same_crash(tb)]


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


