"""The held-out judge's rules: the patched code's answers on inputs no engine saw, against the base's.

Every input was called on the base and with the diff, each side in a process of its own (heldout.py). The
rules, and whether each refuses or is a hint for the reviewer:

- special_case (refuses, `overfitted`): an input that crashes the base exactly as the tested input does (same
  exception type through the crash site, with the same arguments: the same key, the same message) is handled
  another way than the tested input (returns where it raises, or raises another type) *and* takes another path
  through the diff's own lines (line and instruction). A difference the diff's lines do not make (a key the
  diff adds to a table: other keys still raise, by the same path) is not held; nor is an input that empties or
  zeroes a value the tested input has (an empty list may rightly get an error of its own), nor one that only
  shares the exception's type (another key, another message: another case).
- hard_coded (refuses, `overfitted`): the tested input's answer, a value the failing test compares with (not
  None, a bool, an empty value or 0), is also given for at least 3 other inputs whose handling the diff changed
  (crashing the base the same way, or answered otherwise by it), they make up at least half of those inputs,
  and the base's own answers vary (at least 3 distinct).
- special_case, for a failed assertion (refuses, `overfitted`): the tested input takes a path through the diff's
  lines that no generated input takes, and the diff changes the base's answer for none of them.
- returns_nothing (refuses, `behaves_differently`): at least 2 inputs the base answers with a value get None,
  and None is no value the failing test compares with.
- call_order (refuses, `behaves_differently`): the test's own calls, made again in order and then in reverse in
  one process, get another answer the second or third time (a value that changes, or the base's crash back),
  where the base answers each call alike every time.
- tracer_replaced (refuses, `suspicious_diff`): with the diff, a call replaced the judge's trace hook (an audit
  event), which no call on the base did.
- Hints, never refusing: inputs the base answered that now raise (a fix may rightly refuse more); changed
  answers after a crash's fix (a wrong value's fix changes answers by design: not even a hint then); other
  crash-alike inputs that still crash; the tested call crashing outside the test as before; a new None.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from patcher.verify.evidence import type_matches
from patcher.verify.heldtarget import Call, Target, class_of
from patcher.verify.records import Evidence
from sandbox.plain import decode, show_enc

TRIVIAL = (None, True, False, 0, "", b"")
JUDGE = "held_out"


@dataclass(frozen=True)
class Answer:
    kind: str
    """returned, raised, timeout, skipped, bad (the input could not be rebuilt) or missing (no record)."""
    value: Any = None
    """The returned value, as plain data (sandbox/plain.py)."""
    exc: str = ""
    site: bool = False
    args: str = ""
    path: frozenset[tuple[str, int, int]] = frozenset()
    traced: bool = True

    @classmethod
    def of(cls, rec: dict[str, Any] | None) -> Answer:
        if not rec:
            return cls("missing")
        out = rec.get("o") or {}
        path = frozenset((str(p[0]), int(p[1]), int(p[2])) for p in rec.get("p") or [])
        traced = rec.get("traced", True) is not False
        if "r" in out:
            return cls("returned", out["r"], path=path, traced=traced)
        if "x" in out:
            return cls("raised", exc=str(out["x"]), site=bool(out.get("site")), args=str(out.get("args")),
                       path=path, traced=traced)
        return cls("timeout" if out.get("t") == "timeout" else "skipped" if out.get("t") else "bad")

    @property
    def cls_(self) -> str:
        return f"raises {self.exc}" if self.kind == "raised" else self.kind

    def same_crash(self, other: Answer) -> bool:
        return self.kind == other.kind == "raised" and (self.exc, self.site, self.args) == (
            other.exc, other.site, other.args)

    def alike(self, other: Answer) -> bool:
        """The same answer: the same value, or the same exception type."""
        if self.kind != other.kind:
            return False
        return self.value == other.value if self.kind == "returned" else self.exc == other.exc

    def said(self) -> str:
        if self.kind == "returned":
            return f"returns {show_enc(self.value)}"
        return f"raises {self.exc}" if self.kind == "raised" else f"gives no answer ({self.kind})"


@dataclass
class Sides:
    """Both sides' answers: the reproduction's rounds (in order, again, reversed) and the generated inputs."""

    target: Target
    inputs: list[Call]
    base: list[Answer]
    patched: list[Answer]
    seeds: list[Any] = field(default_factory=list)
    """The constants of the function's module the inputs were seeded with (a table's keys)."""

    @property
    def rounds(self) -> int:
        return len(self.target.calls)

    def tested_at(self) -> int:
        return self.target.calls.index(self.target.tested)

    def generated(self) -> list[tuple[Call, Answer, Answer]]:
        start = 3 * self.rounds
        return list(zip(self.inputs, self.base[start:], self.patched[start:], strict=False))


def judge(sides: Sides, exc_type: str | None, expected: list[Any]) -> tuple[list[Evidence], dict[str, Any]]:
    """The evidence, and the summary for `verification.judges["held_out"]`."""
    t = sides.tested_at()
    tb, tp = sides.base[t], sides.patched[t]
    gen = sides.generated()
    crash = sides.target.crash and tb.kind == "raised" and tb.site and (not exc_type or type_matches(tb.exc, exc_type))
    same = [g for g in gen if crash and g[1].same_crash(tb) and not _emptied(sides.target.tested, g[0])]
    working = [g for g in gen if g[1].kind == "returned"]
    evidence: list[Evidence] = []
    summary: dict[str, Any] = {
        "target": sides.target.name, "tested": _show(sides.target, sides.target.tested), "inputs": len(gen),
        "crash_alike": sum(1 for g in gen if crash and g[1].kind == "raised" and g[1].exc == tb.exc and g[1].site),
        "same_crash": len(same), "base_working": len(working),
        "changed": sum(1 for g in working if not g[2].alike(g[1])), "counterexamples": [],
        "sample": [_show(sides.target, c) for c in sides.inputs[:3]]}
    if sides.target.crash and not crash:
        summary["note"] = f"called directly, the tested call does not crash the base as in the test ({tb.said()})"
    elif crash and tp.same_crash(tb):
        evidence.append(Evidence(JUDGE, "not_in_effect", "called directly with the test's own arguments, the "
                                 "fix does not take effect", quote=f"{_show(sides.target, sides.target.tested)} "
                                 f"still {tp.said()}"))
    elif crash:
        evidence += _special_case(sides, same, tp) or _split(sides, gen, tb, tp)
        evidence += _hard_coded(sides, same + working, tp, expected)
    else:
        evidence += _assertion_path(sides, gen, tp)
        evidence += _hard_coded(sides, working, tp, expected)
    evidence += _differential(sides, working, expected, after_crash=bool(crash))
    evidence += _call_order(sides) + _tracer(sides)
    summary["counterexamples"] = [e.quote for e in evidence if e.refuses][:5]
    return evidence, summary


def _special_case(sides: Sides, same: list[tuple[Call, Answer, Answer]], tp: Answer) -> list[Evidence]:
    for call, _, p in same:
        if p.kind in ("returned", "raised") and p.cls_ != tp.cls_ and p.path != tp.path:
            quote = f"{_show(sides.target, call)} {p.said()} where {_show(sides.target, sides.target.tested)} " \
                    f"{tp.said()}"
            return [Evidence(JUDGE, "special_case", "the fix handles the tested input another way than inputs that "
                             "crash the base exactly as it does (another path through the diff's lines)",
                             refuses=True, reason="overfitted", quote=quote)]
    return []


def _split(sides: Sides, gen: list[tuple[Call, Answer, Answer]], tb: Answer, tp: Answer) -> list[Evidence]:
    """Inputs of the tested input's kind (its types, character classes, signs, sizes not emptied) that crash the base
    with another key or message, drawn freely (no constant of the module, no case of the tested value): some
    handled as the tested input (its outcome, its path), some not (another outcome by another path). The diff's
    lines pick out a shape, not a table's entries."""
    tested = sides.target.tested
    kin = [g for g in gen if g[1].kind == "raised" and g[1].exc == tb.exc and g[1].site and not g[1].same_crash(tb)
           and _kin(tested, g[0]) and _free(tested, g[0], sides.seeds)]
    took = [g for g in kin if g[2].cls_ == tp.cls_ and g[2].path == tp.path]
    other = [g for g in kin if g[2].kind in ("returned", "raised") and g[2].cls_ != tp.cls_ and g[2].path != tp.path]
    if len(took) < 2 or not other:
        return []
    quote = f"{_show(sides.target, other[0][0])} {other[0][2].said()} where {_show(sides.target, took[0][0])} " \
            f"{took[0][2].said()} as {_show(sides.target, tested)} does"
    return [Evidence(JUDGE, "special_case", "the fix handles inputs of the tested input's kind that crash the base "
                     f"alike two ways by another path through its lines ({len(took)} as the tested input, "
                     f"{len(other)} not)", refuses=True, reason="overfitted", quote=quote)]


def _hard_coded(sides: Sides, changed: list[tuple[Call, Answer, Answer]], tp: Answer, expected: list[Any]
                ) -> list[Evidence]:
    """The tested input's answer given to many inputs whose handling the diff changed, where the base varies."""
    if tp.kind != "returned" or not _meaningful(tp.value, expected):
        return []
    moved = [g for g in changed if g[1].kind != "returned" or not g[2].alike(g[1])]
    constant = [g for g in moved if g[2].kind == "returned" and g[2].value == tp.value and g[1].value != tp.value]
    varied = {repr(a.value) for a in sides.base if a.kind == "returned"}
    if len(constant) < 3 or 2 * len(constant) < len(moved):
        return []
    call, b, p = constant[0]
    if len(varied) < 3:  # the base answers too little to say the function's answers should vary
        return [Evidence(JUDGE, "constant_answer", f"the fix answers {len(constant)} inputs with the tested input's "
                         "answer", quote=f"{_show(sides.target, call)} {p.said()} (a value the test expects)")]
    quote = f"{_show(sides.target, call)} {p.said()} (a value the test expects) where the base {b.said()}"
    return [Evidence(JUDGE, "hard_coded", f"the fix answers {len(constant)} of {len(moved)} inputs it changes with "
                     "the tested input's answer, where the base's answers vary", refuses=True, reason="overfitted",
                     quote=quote)]


def _assertion_path(sides: Sides, gen: list[tuple[Call, Answer, Answer]], tp: Answer) -> list[Evidence]:
    if not tp.path or not gen or any(p.path == tp.path for _, _, p in gen):
        return []
    if any(p.kind in ("returned", "raised") and not p.alike(b) for _, b, p in gen):
        return []
    call, _, p = gen[0]
    quote = f"{_show(sides.target, call)} {p.said()} as on the base, where {_show(sides.target, sides.target.tested)}" \
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
                            quote=f"{_show(sides.target, call)} returns None where the base {b.said()}"))
    raising = [g for g in working if g[2].kind == "raised"]
    if raising:
        call, b, p = raising[0]
        out.append(Evidence(JUDGE, "raises_now", f"{len(raising)} of {len(working)} input(s) the base answers now "
                            "raise", quote=f"{_show(sides.target, call)} {p.said()} where the base {b.said()}"))
    other = [g for g in working if g[2].kind == "returned" and not g[2].alike(g[1]) and g not in nothing]
    if other and after_crash:
        call, b, p = other[0]
        out.append(Evidence(JUDGE, "changed_answers", f"{len(other)} of {len(working)} input(s) the base answers "
                            "get another answer", quote=f"{_show(sides.target, call)} {p.said()} where the base "
                            f"{b.said()}"))
    return out


def _call_order(sides: Sides) -> list[Evidence]:
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
                quote = f"{_show(sides.target, call)} {patched[0].said()} on the test's own call, then {later.said()}"
                return [Evidence(JUDGE, "call_order", "the fix answers the test's own calls differently when they "
                                 "are made again or in another order (the base answers alike every time)",
                                 refuses=True, reason="behaves_differently", quote=quote)]
    return []


def _tracer(sides: Sides) -> list[Evidence]:
    if any(not a.traced for a in sides.base) or all(a.traced for a in sides.patched):
        return []
    return [Evidence(JUDGE, "tracer_replaced", "with the diff, a call replaced the judge's trace hook over the "
                     "diff's own lines", refuses=True, reason="suspicious_diff",
                     quote=f"{sides.target.name} (an audit event sys.settrace or sys.setprofile during the call)")]


def _meaningful(enc: Any, expected: list[Any]) -> bool:
    """Whether an answer is a non-trivial value the test compares with."""
    try:
        value = decode(enc)
    except (ValueError, TypeError):
        return False
    if any(value is t or (type(value) is type(t) and value == t) for t in TRIVIAL):
        return False
    if isinstance(value, list | tuple | dict | set | frozenset | str | bytes) and not value:
        return False
    return any(type(value) is type(e) and value == e for e in expected) or any(
        isinstance(value, int | float) and isinstance(e, int | float) and not isinstance(e, bool) and value == e
        for e in expected)


def _pairs(tested: Call, call: Call) -> list[tuple[Any, Any]]:
    """(tested value, the input's value) of each argument the input changes."""
    out = []
    for t, g in zip([*tested["pos"], *(e for _, e in tested["kw"])], [*call["pos"], *(e for _, e in call["kw"])],
                    strict=False):
        if t != g:
            try:
                out.append((decode(t), decode(g)))
            except (ValueError, TypeError):
                continue
    return out


def _kin(tested: Call, call: Call) -> bool:
    """Whether every changed value is of the tested value's kind: its type, its sign, non-empty where it is, text
    of its character classes."""
    for a, b in _pairs(tested, call):
        if type(a) is not type(b) or _emptied_value(a, b):
            return False
        if isinstance(a, int | float) and (a > 0) != (b > 0):
            return False
        if isinstance(a, str) and not {class_of(c) for c in b} <= {class_of(c) for c in a}:
            return False
    return True


def _free(tested: Call, call: Call, seeds: list[Any]) -> bool:
    """Whether every changed value was drawn freely: no constant of the module, no other case of one or of the
    tested value."""
    for a, b in _pairs(tested, call):
        known = [a, *seeds]
        if any(type(b) is type(k) and (b == k or (isinstance(b, str) and b.casefold() == k.casefold()))
               for k in known):
            return False
    return True


def _emptied(tested: Call, call: Call) -> bool:
    """Whether the input empties, zeroes or removes (None) a value the tested input has."""
    return any(_emptied_value(a, b) for a, b in _pairs(tested, call))


def _emptied_value(a: Any, b: Any) -> bool:
    if a is not None and b is None:
        return True
    if isinstance(a, int | float) and not isinstance(a, bool) and a and isinstance(b, int | float) and not b:
        return True
    return hasattr(a, "__len__") and hasattr(b, "__len__") and bool(len(a)) and not len(b)


def _show(target: Target, call: Call) -> str:
    parts = [show_enc(e, 40) for e in call["pos"]] + [f"{k}={show_enc(e, 40)}" for k, e in call["kw"]]
    if target.spec.get("kind") == "method" and parts:
        parts = parts[1:]
        return f"{show_enc(call['pos'][0], 40)}.{target.short}({', '.join(parts)})"
    return f"{target.short}({', '.join(parts)})"
