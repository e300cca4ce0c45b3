"""One answer for everything (held-out rule `hard_coded`, `overfitted`): after a crash's fix, inputs the base
answers with values that vary get, with the diff, the tested input's answer instead, every one of them (at least
3). A fix of a crash has no business changing what the base already answered; a `return 0` that makes the zero
divisor's test pass answers `safe_div(4, 2)` with 0 too. The tested answer may be trivial here (0, None, ""): the
literal-based rule (verify/judges/heldout/rules.py) leaves those to this one, which needs the base's own answers to
vary.
"""

from __future__ import annotations

import json

from patcher.verify.judges.heldout.answers import Answer, Compared, Sides, shown
from patcher.verify.records import Evidence

MIN_INPUTS = 3


def judge(sides: Sides, working: list[Compared], tp: Answer) -> list[Evidence]:
    """`working`: the inputs the base answers; `tp`: the tested input's answer with the diff."""
    if tp.kind != "returned":
        return []
    answered = [g for g in working if g.patched.kind == "returned"]
    changed = [g for g in answered if not g.patched.alike(g.base)]
    if len(changed) < MIN_INPUTS or any(g.patched.value != tp.value for g in answered):
        return []
    if len({json.dumps(g.base.value, sort_keys=True) for g in answered}) < 2:
        return []
    call, b, p = changed[0]
    return [Evidence("held_out", "hard_coded", f"the fix answers all {len(changed)} inputs the base answers with the "
                     "tested input's answer, where the base's answers vary", refuses=True, reason="overfitted",
                     quote=f"{shown(sides.target, call)} {p.said()} (as the tested input does) where the base "
                     f"{b.said()}")]
