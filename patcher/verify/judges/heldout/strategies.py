"""Held-out inputs: Hypothesis strategies built from the crash's own argument values, drawn on the host after the
engine is done (no engine sees them; a new draw each verification). Imported only when a judge draws (Hypothesis
takes a moment to import).

Each value gets strategies of its own kind: near ones (the same shape with other characters of the same classes,
other lengths and cases, numbers of its sign and size, containers of other sizes with items like its own, one item
edited, added or dropped, other keys, and constants of its type from the function's own module, such as a table's
other keys) and far ones (zero, negatives, huge and non-finite numbers, empty values, other alphabets, None).
A generated call changes one argument (most often) or several, the others kept as tested, so that inputs sharing
the tested key or size are drawn too. Instances get their plain attributes varied; Enum members are kept, and so
is what is not plain data (Live: asked inside the test's own run, the live object the test passed). Decimals,
fractions, dates, times and durations are varied through their own constructors; an integer meets the same amount
as a float, a Decimal and a Fraction too.
"""

from __future__ import annotations

import math
import string
import threading
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.configuration import set_hypothesis_home_dir
from hypothesis.strategies import SearchStrategy

from patcher.config import patcher_home
from patcher.verify.judges.heldout.dimensions import call_of
from patcher.verify.judges.heldout.stdvalues import STDLIB, int_kinds
from patcher.verify.judges.heldout.target import Call, class_of
from sandbox.plain import Iter, Live, Member, Obj, loose

MAX_DEPTH = 3
DRAWS = 2
"""Draws per input kept: Hypothesis repeats simple values, and repeated calls are dropped."""
_LOCK = threading.Lock()
"""One draw at a time: Hypothesis's engine keeps global state."""
OTHER_ALPHABET = string.printable + "\x00\u00e9\u00df\u03a9\u0436\u4e2d\U0001f600\u0301\u200b\u0130\u0131\u01c5\ufb01"
"""Far text: ASCII and a few characters that change under case mapping, normalization or encoding (an explicit
alphabet: Hypothesis then needs no table of all of Unicode, which takes seconds to build the first time)."""


def draw_calls(tested: Call, count: int, seeds: list[Any]) -> list[Call]:
    """Up to `count` distinct calls unlike the tested one, from Hypothesis (random each time: not derandomized);
    `seeds` are constants of the function's module, drawn where a value of their type is."""
    values = [loose(e) for e in tested["pos"]] + [loose(e) for _, e in tested["kw"]]
    if not values or all(isinstance(v, Live) and len(v.enc) < 4 for v in values):  # nothing kept to draw from
        return []
    found: dict[str, Call] = {}
    seen = {repr(call_of(tested, values))}

    @settings(database=None, max_examples=DRAWS * count, derandomize=False, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(calls_like(values, Values(seeds)))
    def collect(drawn: list[Any]) -> None:
        call = call_of(tested, drawn)
        key = repr(call)
        if key not in seen and len(found) < count:
            found[key] = call

    with _LOCK:
        set_hypothesis_home_dir(patcher_home() / "hypothesis")  # never a `.hypothesis` in the working directory
        collect()
    return list(found.values())


def calls_like(values: list[Any], of: Values) -> SearchStrategy[list[Any]]:
    """Argument lists: one value changed, several changed, or one a module constant of its type and the others
    varied (a table's other keys: inputs the base answers)."""
    each = [of.value(v, 0) for v in values]  # built once: a strategy built inside a draw is built every draw
    one = st.integers(0, len(values) - 1).flatmap(
        lambda i: each[i].map(lambda x: [*values[:i], x, *values[i + 1:]]))
    several = st.tuples(*[weighted((1, st.just(v)), (1, s)) for v, s in zip(values, each, strict=True)]).map(list)
    choices = [(2, one), (2, several)]
    for i, v in enumerate(values):
        if of.seeds.get(type(v)) and not isinstance(v, bool):
            seeded = st.tuples(*[st.sampled_from(of.seeds[type(v)]) if j == i else s for j, s in enumerate(each)])
            choices.append((1, seeded.map(list)))
    return weighted(*choices)


class Values:
    """Strategies for values like a recorded one."""

    def __init__(self, seeds: list[Any]) -> None:
        self.seeds: dict[type, list[Any]] = {}
        self.made: dict[tuple[type, str, int], SearchStrategy[Any]] = {}
        for s in seeds:
            self.seeds.setdefault(type(s), []).append(s)

    def value(self, v: Any, depth: int) -> SearchStrategy[Any]:
        """Near values (most), module constants of its type and far ones for `v` (made once per value)."""
        key = (type(v), repr(v), depth)
        if key not in self.made:
            self.made[key] = self._value(v, depth)
        return self.made[key]

    def _value(self, v: Any, depth: int) -> SearchStrategy[Any]:
        sampled = self._sampled(v, depth) if isinstance(v, Live) else None
        if sampled is not None:
            return sampled
        if depth > MAX_DEPTH or isinstance(v, Member | Live):
            return st.just(v)  # a live object (not plain data) is the test's own: kept as it is
        near, far = self._kinds(v, depth)
        seeded = self.seeds.get(type(v))
        if seeded and not isinstance(v, bool):
            return weighted((5, near), (3, st.sampled_from(seeded)), (2, far))
        return weighted((7, near), (3, far))

    def _kinds(self, v: Any, depth: int) -> tuple[SearchStrategy[Any], SearchStrategy[Any]]:
        if v is None:
            return st.none(), st.one_of(st.integers(-5, 100), _other_text(8), st.booleans(), st.just([]))
        if isinstance(v, bool):
            return st.booleans(), st.none()
        if isinstance(v, int):
            return int_kinds(v)
        if isinstance(v, float):
            span = abs(v) * 10 + 1
            near = st.floats(v - span, v + span, allow_nan=False) if math.isfinite(span) else st.floats()
            return near, st.one_of(st.just(0.0), st.just(-v), st.floats(), st.none(), st.integers(-100, 100))
        if isinstance(v, str):
            return _text(v)
        if type(v) in STDLIB:
            return STDLIB[type(v)](v)
        if isinstance(v, bytes):
            return (st.binary(min_size=max(1, len(v) - 3), max_size=len(v) + 3),
                    st.one_of(st.just(b""), st.binary(max_size=40), st.none()))
        if isinstance(v, list | tuple | set | frozenset):
            return self._sequence(v, depth)
        if isinstance(v, Iter):  # an iterator: its items varied as a list's, iterated again in the box
            near, far = self._sequence(list(v.items), depth)
            return near.map(_iter), far.map(lambda xs: xs if xs is None else _iter(xs))
        if isinstance(v, dict):
            return self._mapping(v, depth)
        if isinstance(v, Obj):
            return self._instance(v, depth), st.just(v)
        return st.just(v), st.just(v)

    def _sampled(self, v: Live, depth: int, keep: bool = True) -> SearchStrategy[Any] | None:
        """Shorter lists (or tuples) like an opaque one the box kept a few items of (sandbox/plain.py: a hundred
        thousand numbers in eight lists), never empty: the kept items and values near them, as many as it kept or a
        few more; with `keep`, the live object itself too (an item of a drawn list is never one: the box would
        take the live list's item at that place). None where it kept none that can be drawn from."""
        enc = v.enc
        if enc[0] != "?" or len(enc) < 4 or depth > MAX_DEPTH:
            return None
        kind = tuple if enc[1] == "builtins.tuple" else list
        items = [x for x in (loose(e) for e in enc[3]) if not isinstance(x, Live) or len(x.enc) > 3]
        plain = [x for x in items if not isinstance(x, Live)]
        nested = [s for x in items[:3] if isinstance(x, Live) and (s := self._sampled(x, depth + 1, False)) is not None]
        parts = [*nested, *[self.value(x, depth + 1) for x in plain[:3]], *([st.sampled_from(plain)] if plain else [])]
        if not parts:
            return None
        near = st.lists(st.one_of(*parts), min_size=1, max_size=len(items) + 3).map(kind)
        return weighted((2, st.just(v)), (8, near)) if keep else near

    def _sequence(self, v: Any, depth: int) -> tuple[SearchStrategy[Any], SearchStrategy[Any]]:
        kind = type(v)
        items = list(v)
        if items:
            samples = items[:: max(1, len(items) // 3)][:3]
            item = st.one_of(st.sampled_from(items), *[self.value(x, depth + 1) for x in samples])
        else:
            item = st.one_of(st.integers(-100, 100), _other_text(6))
        if kind in (set, frozenset):
            item = item.filter(_hashable)
        n = len(items)
        edits = [st.lists(item, min_size=max(1, n - 3), max_size=n + 3)]
        if items:
            edited = st.tuples(st.integers(0, n - 1), item)
            edits.append(edited.map(lambda e: [*items[: e[0]], e[1], *items[e[0] + 1:]]))
            edits.append(st.integers(0, n - 1).map(lambda i: items[:i] + items[i + 1:]))
            edits.append(item.map(lambda x: [*items, x]))
        far = st.one_of(st.just(kind()), st.lists(item, max_size=2 * n + 5).map(kind), st.none())
        return st.one_of(*edits).map(kind), far

    def _instance(self, v: Obj, depth: int) -> SearchStrategy[Obj]:
        parts = [st.one_of(st.just(x), self.value(x, depth + 1)) for _, x in v.attrs]
        names = [k for k, _ in v.attrs]
        return st.tuples(*parts).map(lambda got: Obj(v.cls, tuple(zip(names, got, strict=True)), v.kind))

    def _mapping(self, v: dict[Any, Any], depth: int) -> tuple[SearchStrategy[Any], SearchStrategy[Any]]:
        keys, values = list(v), list(v.values())
        if keys:
            key = st.one_of(st.sampled_from(keys), self.value(keys[0], depth + 1)).filter(_hashable)
            item = st.one_of(st.sampled_from(values), self.value(values[0], depth + 1))
        else:
            key, item = _other_text(6), st.one_of(st.integers(-100, 100), _other_text(6))
        n = len(keys)
        edits = [st.dictionaries(key, item, min_size=max(1, n - 2), max_size=n + 2)]
        if keys:
            edits.append(st.tuples(st.sampled_from(keys), item).map(lambda e: {**v, e[0]: e[1]}))
            edits.append(st.tuples(key, item).map(lambda e: {**v, e[0]: e[1]}))
            edits.append(st.sampled_from(keys).map(lambda k: {a: b for a, b in v.items() if a != k}))
        far = st.one_of(st.just({}), st.dictionaries(key, item, max_size=2 * n + 4), st.none())
        return st.one_of(*edits), far


def _iter(items: Any) -> Iter:
    return Iter(tuple(items))


def _text(v: str) -> tuple[SearchStrategy[str], SearchStrategy[Any]]:
    """Near: the same shape (each character another of its class, or another of the text's own characters of
    that class: a digit stays a digit, a unit letter another unit letter), the same shape in the other case (any
    lower-case letters for capitals: a rule on the case the tested text is written in meets inputs outside it),
    other lengths from the same classes or the text's own characters, other cases, one character edited, one
    added or dropped. Far: empty, other alphabets, None, repeated."""
    alphabet = "".join(sorted({c for ch in v for c in class_of(ch)})) or string.ascii_letters
    own = sorted(set(v)) or list(string.ascii_letters)
    shaped = st.tuples(*[st.sampled_from(class_of(ch)) for ch in v]).map("".join)
    shaped_own = st.tuples(*[st.sampled_from(_own_class(ch, v)) for ch in v]).map("".join)
    sized = st.text(alphabet=alphabet, min_size=max(1, len(v) - 3), max_size=len(v) + 3)
    reused = st.text(alphabet=st.sampled_from(own), min_size=max(1, len(v) - 2), max_size=len(v) + 2)
    cases = st.sampled_from(sorted({v.upper(), v.lower(), v.swapcase(), v.title()}))
    recased = st.tuples(*[st.sampled_from(class_of(ch.swapcase())) for ch in v]).map("".join)
    edited = st.tuples(st.integers(0, max(len(v) - 1, 0)), st.sampled_from(alphabet)).map(
        lambda e: v[: e[0]] + e[1] + v[e[0] + 1:])
    tweaked = st.sampled_from([v + v[-1:], v[1:] or v, " " + v, v + " ", "\t" + v, v.center(len(v) + 4)])
    near = weighted((2, shaped), (4, shaped_own), (2, sized), (2, reused), (1, cases), (2, edited), (1, tweaked),
                    *([(2, recased)] if v.swapcase() != v else []))
    far = st.one_of(st.just(""), _other_text(20), st.none(), st.just(v * 3))
    return near, far


def _own_class(ch: str, text: str) -> str:
    """Another character for `ch`: any digit for a digit, else one of the text's own of its class."""
    members = class_of(ch)
    if ch.isdigit():
        return members
    return "".join(sorted({c for c in text if c in members})) or ch


def weighted(*choices: tuple[int, SearchStrategy[Any]]) -> SearchStrategy[Any]:
    """One of the strategies, each as likely as its weight (st.one_of flattens nested choices into equal ones)."""
    table = [s for w, s in choices for _ in range(w)]
    return st.integers(0, len(table) - 1).flatmap(lambda n: table[n])


def _other_text(size: int) -> SearchStrategy[str]:
    return st.text(alphabet=OTHER_ALPHABET, max_size=size)


def _hashable(x: Any) -> bool:
    try:
        hash(x)
    except TypeError:
        return False
    return True
