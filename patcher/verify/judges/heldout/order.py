"""An order that is no order: where the base crashed comparing items (`'<' not supported between instances`)
and the fix answers the tested call with the same items in another order, that answer handed back to the fix
must come back as it is. Whatever key the fix sorts by, sorting an order a sort gave keeps it (Python's sort is
stable: ties stay as they came); an answer that is rearranged again (a list reversed, rotated, shuffled) was
never an order, though it matched the test's one example (`ordered([low, high]) == [high, low]`).

The judge cannot know the key, so it asks nothing else: the rearrangements of the tested call's short list (up
to 4 items: every order, 23 calls at most) are drawn with the held-out inputs (verify/judges/heldout/judge.py), so that
the fix's own answer is among them; the rule (`judge`) reads the answer to it. It refuses (`overfitted`) only where the
base's crash was a failed comparison, the tested answer holds exactly the tested items, and the answer to that answer
holds them in yet another order.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from patcher.verify.judges.heldout.answers import Answer, Sides, shown
from patcher.verify.judges.heldout.target import Call
from patcher.verify.records import Evidence

MAX_ITEMS = 4
"""Every order of a list this short is drawn (4! - 1 = 23 calls); longer lists are not asked."""
COMPARED = "not supported between instances"
SEQUENCES = ("l", "t")


def rearrangements(tested: Call) -> list[Call]:
    """Every other order of each short list or tuple argument of the tested call, the rest kept."""
    out: list[Call] = []
    for at, enc in _arguments(tested):
        items = enc[1]
        if not 2 <= len(items) <= MAX_ITEMS:
            continue
        for order in dict.fromkeys(json.dumps(list(p)) for p in itertools.permutations(items)):
            if json.loads(order) != items:
                out.append(_with(tested, at, [enc[0], json.loads(order)]))
    return out


def judge(sides: Sides, tb: Answer, tp: Answer) -> list[Evidence]:
    """The tested answer handed back, rearranged again (see the module's docstring)."""
    if not (tb.kind == "raised" and tb.exc == "TypeError" and COMPARED in tb.args and tp.kind == "returned"):
        return []
    answer = tp.value
    if not (isinstance(answer, list) and len(answer) == 2 and answer[0] in SEQUENCES and isinstance(answer[1], list)):
        return []
    tested = sides.target.tested
    for at, enc in _arguments(tested):
        if not _same_items(enc[1], answer[1]) or enc[1] == answer[1]:
            continue
        back = _with(tested, at, [enc[0], answer[1]])
        for call, _, p in sides.generated():
            if call != back or p.kind != "returned":
                continue
            again = p.value
            if isinstance(again, list) and len(again) == 2 and again[0] in SEQUENCES and again[1] != answer[1] \
                    and _same_items(again[1], answer[1]):
                quote = f"{shown(sides.target, tested)} {tp.said()}; handed that back, {shown(sides.target, call)} " \
                        f"{p.said()}"
                return [Evidence("held_out", "not_an_order", "the fix answers the tested call with its items in "
                                 "another order, and that answer handed back comes back in yet another order: no "
                                 "sort does that (the base crashed comparing the items)", refuses=True,
                                 reason="overfitted", quote=quote)]
    return []


def _arguments(call: Call) -> list[tuple[tuple[str, int | str], Any]]:
    """(where, encoded value) of each list or tuple argument: ("pos", index) or ("kw", name)."""
    out: list[tuple[tuple[str, int | str], Any]] = [(("pos", i), e) for i, e in enumerate(call["pos"])]
    out += [(("kw", k), e) for k, e in call["kw"]]
    return [(at, e) for at, e in out if isinstance(e, list) and len(e) == 2 and e[0] in SEQUENCES
            and isinstance(e[1], list)]


def _with(call: Call, at: tuple[str, int | str], enc: Any) -> Call:
    where, key = at
    if where == "pos":
        return {"pos": [enc if i == key else e for i, e in enumerate(call["pos"])], "kw": call["kw"]}
    return {"pos": call["pos"], "kw": [[k, enc if k == key else e] for k, e in call["kw"]]}


def _same_items(a: list[Any], b: list[Any]) -> bool:
    return sorted(json.dumps(x, sort_keys=True) for x in a) == sorted(json.dumps(x, sort_keys=True) for x in b)
