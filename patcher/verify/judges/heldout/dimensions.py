"""The tested call changed along one dimension at a time, the same for every verification whatever Hypothesis draws
(strategies.py draws the rest): the tested text in each other case and padded with a space (or with the space inside),
the tested number as the other numeric type and at other magnitudes, the tested text beginning or ending as a text
constant of the module does (a table's keys), and the test's live objects made again as equal copies (identity).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from patcher.verify.judges.heldout.target import Call, class_of
from sandbox.plain import encode, loose


def recased(tested: Call) -> list[Call]:
    """The tested call with one text argument in each other case (lower, upper, swapped), the rest kept: every
    verification meets the tested text written otherwise, whatever Hypothesis draws."""
    return _each_changed(tested, lambda v: [v.lower(), v.upper(), v.swapcase()] if isinstance(v, str) else [])


def padded(tested: Call) -> list[Call]:
    """The tested call with one text argument padded with a space before, after and on both sides, and with the
    same space inside it instead, the rest kept: every verification meets the tested text padded, and beside it
    the same characters with the space where padding is not (special.padding reads the two together)."""
    def spaced(v: Any) -> list[Any]:
        if not isinstance(v, str) or not v or v != v.strip():
            return []
        inside = [f"{v[:len(v) // 2]} {v[len(v) // 2:]}"] if len(v) >= 2 else []
        return [f" {v}", f"{v} ", f" {v} ", *inside]
    return _each_changed(tested, spaced)


MAX_KEYED = 8
"""Texts per argument that `keyed` makes."""


def keyed(tested: Call, seeds: list[Any]) -> list[Call]:
    """The tested call with one text argument taking its first or its last character from a text constant of the
    function's module (a table's key: `"CHF"` beside `"EUR"` and `"USD"` becomes `"EHF"`, `"UHF"`, `"CHR"`,
    `"CHD"`), where that character is of the class of the one it replaces, the rest kept: every verification meets
    texts of the tested kind that begin or end as a known key does, never a key itself (a rule on a key's first
    letter, which the draws near the tested text rarely cross). Constants of the tested text's length first."""
    keys = [s for s in seeds if isinstance(s, str) and s]

    def near_keys(v: Any) -> list[Any]:
        if not isinstance(v, str) or len(v) < 2:
            return []
        out: dict[str, None] = {}
        for k in sorted(keys, key=lambda k: abs(len(k) - len(v))):
            for other in (k[0] + v[1:], v[:-1] + k[-1]):
                if other != v and other not in keys and all(c in class_of(t) for c, t in zip(other, v, strict=True)):
                    out.setdefault(other)
        return list(out)[:MAX_KEYED]
    return _each_changed(tested, near_keys)


def retyped(tested: Call) -> list[Call]:
    """The tested call with one number argument as the same amount of the other type (`0` as `0.0`, `7.0` as `7`),
    the rest kept: every verification meets the tested number as another numeric type, whatever Hypothesis draws."""
    def other(v: Any) -> list[Any]:
        if isinstance(v, bool) or not isinstance(v, int | float):
            return []
        if isinstance(v, int):
            return [float(v)]
        return [int(v)] if math.isfinite(v) and v == int(v) else []
    return _each_changed(tested, other)


def magnified(tested: Call) -> list[Call]:
    """The tested call with one number argument (not zero) 10, 100 and 1000 times as large, of its type and sign,
    the rest kept: every verification meets the tested number at other magnitudes (a guard on `abs(n) < 100` that
    the draws near the tested value rarely cross), whatever Hypothesis draws."""
    def larger(v: Any) -> list[Any]:
        if isinstance(v, bool) or not isinstance(v, int | float) or not v or not math.isfinite(v):
            return []
        return [v * times for times in (10, 100, 1000)]
    return _each_changed(tested, larger)


def made_again(tested: Call) -> Call | None:
    """The tested call with each argument the host left opaque (the test's live object) asked as an equal copy of
    it, made again through its class in the box (sandbox/judge/heldout/built.py `again`); None where it has none.
    Where no argument can be made again there, the box answers the input as bad (not judged)."""
    pos = [_again(e) for e in tested["pos"]]
    kw = [[k, _again(e)] for k, e in tested["kw"]]
    if pos == list(tested["pos"]) and kw == [list(p) for p in tested["kw"]]:
        return None
    return {**tested, "pos": pos, "kw": kw}


def _again(enc: Any) -> Any:
    return ["=", enc] if isinstance(enc, list) and enc[:1] == ["?"] else enc


def _each_changed(tested: Call, others: Callable[[Any], list[Any]]) -> list[Call]:
    """The tested call with one argument replaced by each of `others(value)` unlike it, the rest kept; distinct."""
    values = [loose(e) for e in tested["pos"]] + [loose(e) for _, e in tested["kw"]]
    out: dict[str, Call] = {}
    for i, v in enumerate(values):
        for other in others(v):
            if repr(other) != repr(v) or type(other) is not type(v):
                call = call_of(tested, [*values[:i], other, *values[i + 1:]])
                out.setdefault(repr(call), call)
    return list(out.values())


def call_of(tested: Call, values: list[Any]) -> Call:
    """`tested` with its arguments' values (positional, then keyword in its order) replaced by `values`."""
    n = len(tested["pos"])
    return {"pos": [encode(v) for v in values[:n]],
            "kw": [[k, encode(v)] for (k, _), v in zip(tested["kw"], values[n:], strict=True)]}
