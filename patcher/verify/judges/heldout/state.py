"""Answers that depend on what was asked before (held-out rules, `behaves_differently`).

call_order (refuses, `behaves_differently`): the test's own calls, made again in order and then in reverse in
  one process, get another answer the second or third time (a value that changes, or the base's crash back),
  where the base answers each call alike every time.

state (refuses, `behaves_differently`): an input answered one way after the test's calls and the inputs before
  it (the diff's lines watched by the trace hook), and another way alone, in a process forked for it after the
  import and not watched (another value, or a raise where it returned), where the base answers it alike both
  times: the answer depends on what was asked before it (a value left behind by an earlier call, a cache under a
  lossy key, a flag an earlier input set) or on being watched (a trace hook installed, a loop slowed by one).
"""

from __future__ import annotations

from patcher.verify.judges.heldout.answers import Sides, shown
from patcher.verify.records import Evidence

JUDGE = "held_out"


def state(sides: Sides) -> list[Evidence]:
    answered = ("returned", "raised")
    for call, b1, b2, p1, p2 in sides.reordered():
        if b1.kind in answered and b1.alike(b2) and p1.kind in answered and p2.kind in answered and not p1.alike(p2):
            quote = f"{shown(sides.target, call)} {p1.said()} after the test's calls, {p2.said()} called alone, " \
                    "unwatched"
            return [Evidence(JUDGE, "state", "the fix answers an input by what was asked before it or by being "
                             "watched (the base answers it alike either way)", refuses=True,
                             reason="behaves_differently", quote=quote)]
    return []


def call_order(sides: Sides) -> list[Evidence]:
    n = sides.rounds
    for i, call in enumerate(sides.target.calls):
        at = (i, n + i, 3 * n - 1 - i)
        base, patched = [sides.base[k] for k in at], [sides.patched[k] for k in at]
        if not all(b.alike(base[0]) for b in base) or patched[0].kind not in ("returned", "raised"):
            continue
        for later in patched[1:]:
            back = later.same_crash(base[0]) and not patched[0].same_crash(base[0])
            changed = later.kind == patched[0].kind == "returned" and not later.alike(patched[0])
            if back or changed:
                quote = f"{shown(sides.target, call)} {patched[0].said()} on the test's own call, then {later.said()}"
                return [Evidence(JUDGE, "call_order", "the fix answers the test's own calls differently when they "
                                 "are made again or in another order (the base answers alike every time)",
                                 refuses=True, reason="behaves_differently", quote=quote)]
    return []
