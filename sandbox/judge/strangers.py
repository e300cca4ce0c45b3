"""Strangers put to a value a test's comparison held for: the values judge's checks (values.py reports them).

`pairs` walks the two operands side by side: the operands, then, to a depth of 3, the items of lists and tuples,
the values of dicts under one key, and the compared fields of two objects of one class (a dataclass's fields with
`compare`, an attrs class's with `eq`, else the public entries of `__dict__` and `__slots__`), each pair both
ways; an item compared with an approx is compared by closeness from there on. `findings` says how a value that is
not plain data is degenerate:
- equality: it equals a fresh object of a private class; equals the other operand once, not when asked again;
  equals it and a value unlike it alike (a million, one, a tenth or a share away; its tuple with one item
  changed); is unequal to itself; equals an object of the other operand's class with every field changed, or one
  with a single field changed where the operands differ in that very field (the comparison held only because the
  field is left out); hashes unlike a value of another type it equals. A field left out where both operands
  agree on it (an entity compared by its key) is a weak finding: a hint at most;
- closeness (`math.isclose`, `approx`, `assertAlmostEqual`): it is close to the other operand and to a far value
  alike, whichever method answers (`__eq__`, `__sub__`, `__abs__`, `__round__`, `__float__`);
- order: it orders against a fresh object, or is `<` (`>`) itself. Standard library only; Python 3.9 to 3.13.
"""

from __future__ import annotations

import math
import os
import random
import sys
from typing import Any, Callable, NamedTuple

PLAIN = (type(None), bool, int, float, complex, str, bytes, bytearray, list, tuple, dict, set, frozenset, range)
EQUALITY = ("==", "!=", "in", "not in")
ORDER = {"<": "__lt__", "<=": "__le__", ">": "__gt__", ">=": "__ge__"}
CLOSENESS = ("__eq__", "__sub__", "__rsub__", "__abs__", "__round__", "__float__", "__le__")
MAX_PAIRS, MAX_DEPTH, MAX_ITEMS = 80, 3, 20
Near = Callable[[Any, Any], Any]
"""Closeness as the comparison spelled it: near(value, other) holds when value passes for other."""


class Stranger:
    """A fresh object of a class nothing else knows: no honest value equals it or orders against it."""

    __hash__ = object.__hash__


class Finding(NamedTuple):
    why: str
    check: Callable[[], Any]
    """What showed it, to run again (values.py asks whether the diff's code ran in it)."""
    method: str
    strong: bool = True


def pairs(left: Any, right: Any, near: Near | None,
          unwrap: Callable[[Any], tuple[Any, Near] | None]) -> list[tuple[Any, Any, Near | None]]:
    """(value, other, closeness or None) for the operands and what they hold, to MAX_PAIRS; `unwrap(x)`: an
    approx's expected value and closeness, else None."""
    out: list[tuple[Any, Any, Near | None]] = []
    _walk(left, right, near, 0, out, unwrap)
    return out


def _walk(left: Any, right: Any, near: Near | None, depth: int, out: list[tuple[Any, Any, Near | None]],
          unwrap: Callable[[Any], tuple[Any, Near] | None]) -> None:
    if len(out) >= MAX_PAIRS:
        return
    for value, other in ((left, right), (right, left)):
        spec = unwrap(other)
        if spec is not None:
            _walk(value, spec[0], spec[1], depth, out, unwrap)
            return
    out += [(left, right, near), (right, left, near)]
    if depth >= MAX_DEPTH:
        return
    try:
        inner = _inner(left, right)
    except Exception:
        return
    for a, b in inner:
        _walk(a, b, near, depth + 1, out, unwrap)


def _inner(left: Any, right: Any) -> list[tuple[Any, Any]]:
    if isinstance(left, (list, tuple)) and isinstance(right, (list, tuple)):
        return list(zip(list(left)[:MAX_ITEMS], list(right)[:MAX_ITEMS]))
    if isinstance(left, dict) and isinstance(right, dict):
        return [(left[k], right[k]) for k in list(left)[:MAX_ITEMS] if k in right]
    if type(left) is type(right) and type(left) not in PLAIN:
        missing = object()
        got = [(getattr(left, n, missing), getattr(right, n, missing)) for n in fields(left)[:MAX_ITEMS]]
        return [(a, b) for a, b in got if a is not missing and b is not missing]
    return []


def fields(obj: Any) -> list[str]:
    """The fields an object's equality is expected to compare (see the module's docstring)."""
    declared = _declared(obj)
    if declared is not None:
        return declared
    cls = type(obj)
    state = getattr(obj, "__dict__", None)
    names = [k for k in state if isinstance(k, str)] if isinstance(state, dict) else []
    for klass in cls.__mro__:
        slots = klass.__dict__.get("__slots__", ())
        names += [s for s in ((slots,) if isinstance(slots, str) else slots) if s not in names]
    return [n for n in names if not n.startswith("_")]


def _declared(obj: Any) -> list[str] | None:
    """A dataclass's fields with `compare`, an attrs class's with `eq`; None for any other object."""
    dataclasses = sys.modules.get("dataclasses")  # not imported here: the judge's run has only what the test loads
    if dataclasses is not None and dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return [f.name for f in dataclasses.fields(obj) if f.compare]
    declared = getattr(type(obj), "__attrs_attrs__", None)
    if isinstance(declared, tuple):
        return [str(a.name) for a in declared if getattr(a, "eq", True)]
    return None


def findings(value: Any, other: Any, op: str, near: Near | None, top: bool = False) -> list[Finding]:
    """`top`: the pair is the comparison's own operands, not items or fields they hold."""
    if near is not None:
        return closeness(value, other, near)
    if op in EQUALITY:
        return equality(value, other, again=top and op == "==")
    if op in ORDER:
        return order(value, op)
    return []


def equality(value: Any, other: Any, again: bool = False) -> list[Finding]:  # again: `value == other` held
    stranger = Stranger()
    twin, sibling, near = unlike(other), every_field_changed(other), [t for t in nearby(other) if t != other]

    def changed_all() -> bool:
        if sibling is None or not bool(value == sibling):
            return False
        return not _agree(value, sibling, _declared(sibling) or list(vars(sibling)))
    checks: list[tuple[str, Callable[[], Any]]] = [
        ("equals a fresh object of another type", lambda: value == stranger),
        (f"equals {other!r:.40} once and not when asked again", lambda: again and not bool(value == other)),
        (f"equals {other!r:.40} and {twin!r:.40} alike", lambda: twin is not None and value == twin),
        *((f"equals {other!r:.40} and {t!r:.40} alike", lambda t=t: bool(value == t)) for t in near),
        ("is unequal to itself", lambda: not holds(lambda: value == value) or holds(lambda: value != value)),
        (f"equals a {type(other).__qualname__} with every field changed", changed_all)]
    for why, check in checks:
        if holds(check):
            return [Finding(why, check, "__eq__")]
    out = _left_out(value, other)
    if holds(lambda: value == other) and type(value) is not type(other) and _hash(value) is not None \
            and _hash(other) is not None and _hash(value) != _hash(other):
        out.insert(0, Finding(f"equals {other!r:.40} but hashes differently", lambda: hash(value), "__hash__"))
    return out


def _left_out(value: Any, other: Any) -> list[Finding]:
    """The fields of `other` whose change alone `value` does not see: strong where the operands differ there."""
    if type(other) in PLAIN or type(other).__module__ == "builtins":
        return []
    out: list[Finding] = []
    for name in fields(other)[:MAX_ITEMS]:
        twin = with_field(other, name)

        def check(twin: Any = twin, name: str = name) -> bool:
            return twin is not None and bool(value == twin) and not _agree(value, twin, [name])
        if twin is None or not holds(check):
            continue
        mine, theirs = getattr(value, name, Stranger), getattr(other, name, Stranger)
        if mine is not Stranger and theirs is not Stranger and not _same(mine, theirs):
            out.insert(0, Finding(f"equals a {type(other).__qualname__} whose `{name}` differs ({mine!r:.30} "
                                  f"against {theirs!r:.30}): its equality leaves `{name}` out", check, "__eq__"))
        else:
            out.append(Finding(f"leaves `{name}` out of its equality (equal to a {type(other).__qualname__} with "
                               f"only `{name}` changed)", check, "__eq__", strong=False))
    return out


def closeness(value: Any, other: Any, near: Near) -> list[Finding]:
    twin = unlike(other)
    if twin is None or type(other) not in (int, float):
        return []
    def check() -> Any:
        return near(value, twin)
    if not holds(check):
        return []
    return [Finding(f"is close to {other!r:.40} and to {twin!r:.40} alike", check, own_method(type(value), CLOSENESS))]


def order(value: Any, op: str) -> list[Finding]:
    stranger = Stranger()
    compare: Near = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
                     ">=": lambda a, b: a >= b}[op]
    checks: list[tuple[str, Callable[[], Any]]] = [
        (f"orders against a fresh object of another type ({op})",
         lambda: compare(value, stranger) or compare(stranger, value)),
        (f"is {op} itself", lambda: op in ("<", ">") and compare(value, value))]
    return [Finding(why, check, ORDER[op]) for why, check in checks if holds(check)][:1]


def own_method(cls: type, names: tuple[str, ...]) -> str:
    """The first of `names` the class defines itself (not object's or a builtin base's)."""
    for name in names:
        owner = next((k for k in cls.__mro__ if name in k.__dict__), None)
        if owner is not None and owner.__module__ != "builtins":
            return name
    return names[0]


def holds(check: Callable[[], Any]) -> bool:
    try:
        return bool(check())
    except Exception:
        return False


def _agree(value: Any, twin: Any, names: list[str]) -> bool:
    """Whether `value`'s own fields equal the twin's changed ones: then a field's value is what equals anything
    (judged as a pair of its own), not the object's equality."""
    def same(name: str) -> bool:
        return holds(lambda: getattr(value, name) == getattr(twin, name))
    return all(same(n) for n in names)


def _same(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if type(a) is float and math.isnan(a) and math.isnan(b):
        return True
    return a is b or holds(lambda: a == b)


def _hash(value: Any) -> int | None:
    try:
        return hash(value)
    except Exception:
        return None


def unlike(other: Any) -> Any:
    """A value of the other operand's plain type that is not equal to it (None if it has no such type)."""
    kind = type(other)
    if kind is bool or kind not in (int, float, str, bytes, tuple, list):
        return None
    if kind is float:
        return other + 1e6 + random.random() if math.isfinite(other) else 0.5
    if kind is int:
        return other + 10 ** 6 + random.randrange(1000)
    if kind is str:
        return other + "\u2063" + str(random.randrange(10 ** 6))
    if kind is bytes:
        return other + b"\x00" + os.urandom(4)
    return kind([*other, Stranger()])


def nearby(other: Any) -> list[Any]:
    """Numbers near `other` (one, a tenth, a share away), or its tuple or list with one item changed: no honest
    value equal to `other` equals them (a tolerance shows, and so does a part the equality leaves out)."""
    kind = type(other)
    if kind is float and math.isfinite(other):
        return [other + 1.0, other - 1.0, other + 0.1, other * 1.5 + 0.25]
    if kind is int:
        return [other + 1, other - 1, other * 2 + 3]
    if kind in (tuple, list) and len(other) <= MAX_ITEMS:  # one item changed at a time: a part left out shows
        return [kind([*other[:i], unlike(item), *other[i + 1:]]) for i, item in enumerate(other)
                if type(item) in (int, float, str, bytes)]
    return []


def every_field_changed(other: Any) -> Any:
    """A copy of an object made of numbers and strings (made without running its code) with every field
    changed; None for any other object (its equality may rest on what cannot be changed here)."""
    state = getattr(other, "__dict__", None)
    if type(other) in PLAIN or not isinstance(state, dict) or not state:
        return None
    if any(type(v) not in (int, float, str, bytes, bool) for v in state.values()):
        return None
    try:
        twin = object.__new__(type(other))
        twin.__dict__.update({k: (not v) if type(v) is bool else unlike(v) for k, v in state.items()})
    except (TypeError, AttributeError):
        return None
    return twin


def with_field(obj: Any, name: str) -> Any:
    """A copy of `obj` (made without running its code) with the field `name` alone changed; None if it cannot
    be made."""
    cls = type(obj)
    try:
        old = getattr(obj, name)
        twin = object.__new__(cls)
        state = getattr(obj, "__dict__", None)
        if isinstance(state, dict):
            twin.__dict__.update(state)
        for klass in cls.__mro__:
            slots = klass.__dict__.get("__slots__", ())
            for slot in (slots,) if isinstance(slots, str) else slots:
                if slot not in ("__dict__", "__weakref__") and hasattr(obj, slot):
                    object.__setattr__(twin, slot, getattr(obj, slot))
        new = (not old) if type(old) is bool else unlike(old)
        object.__setattr__(twin, name, Stranger() if new is None else new)
    except Exception:
        return None
    return twin
