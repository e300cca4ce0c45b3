"""Plain data across the box's edge: argument values and answers as tagged JSON lists, both ways.

The held-out judge records the crash's argument values in the box, generates inputs from them on the host and
calls the code with them in the box again; this is the one spelling all three read. A value is rebuilt only
from data: scalars, text, bytes, lists, tuples, sets, dicts, members of an importable Enum, named tuples and
instances of an importable class whose `__dict__` holds plain data (rebuilt without calling `__init__`).
Anything else (or past the size limits) is opaque: its type and a bounded repr, never rebuilt.

    ["n"] None   ["b", true]   ["i", "12"]   ["f", "1.5"]   ["s", "text"]   ["y", "hex"] bytes
    ["l"|"t"|"e"|"z", [items]] list, tuple, set, frozenset   ["d", [[key, value], ...]]
    ["m", "mod:Qual", "NAME"] enum member   ["nt", "mod:Qual", [items]]   ["o", "mod:Qual", [[attr, value], ...]]
    ["dec", "1.50"] Decimal   ["fr", "3/4"] Fraction   ["date"|"dtm"|"tm", "iso"] date, datetime, time (naive, or
    at a fixed offset)
    ["td", "seconds"] timedelta   ["rg", "start,stop,step"] range   ["it", [items]] an iterator over a list, tuple,
    text or range (its items still to come; rebuilt as an iterator over a list)   ["?", "mod.Qual", "repr"] opaque
    ["?", "builtins.list"|"builtins.tuple", "repr", [items]] an opaque list or tuple (too long, or an item not
    plain) with a few of its items, spread over it, each encoded alike: the host draws shorter ones like it

A value the held-out judge asks inside the test's own run may keep what is opaque as the live object the test
passed (sandbox/judge/heldout/inrun.py): opaque entries are left as they were recorded.

Standard library only; the box loads this file by its path (Python 3.9 and later), the host imports it.
"""

from __future__ import annotations

import importlib.util
import os
import re
from collections.abc import Callable
from typing import Any


def _beside(file: str) -> Any:
    """A module of this folder by its path (never by name: a box's process may have a repository's own
    `sandbox` first on its path), not put in sys.modules."""
    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location(f"_patcher_{file[:-3]}", os.path.join(here, file))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_std = _beside("plainstd.py")
Opaque: type[ValueError] = _std.Opaque
"""A value that is not plain data: it cannot be rebuilt."""
MAX_ITEMS: int = _std.MAX_ITEMS
Obj, Member, Live, Iter, show = _std.Obj, _std.Member, _std.Live, _std.Iter, _std.show
"""The host's stand-ins for what only the box can make again (plainstd.py), and a short repr for people."""
MAX_TEXT = 2000
MAX_DEPTH = 6
MAX_REPR = 160
SAMPLE, SAMPLE_PARTS, ITEM_PARTS = 10, 100, 40  # an opaque list's items kept; their parts in all, and each
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
_SEQUENCES: dict[type, str] = {list: "l", tuple: "t", set: "e", frozenset: "z"}
_BUILD = {"l": list, "t": tuple, "e": set, "z": frozenset}

Enc = list[Any]
Resolve = Callable[[str], Any]


def class_name(cls: type) -> str | None:
    """`module:Qual.Name` of a class that can be found again by importing its module; None for a local class."""
    qual = getattr(cls, "__qualname__", "")
    mod = getattr(cls, "__module__", "")
    if not qual or not mod or "<" in qual or mod in ("builtins", "__main__"):
        return None
    return f"{mod}:{qual}"


def encode(value: Any, depth: int = 0, budget: int = 0) -> Enc:
    """The tagged form of `value` (opaque where it is not plain data or too big; with `budget`, where it has more
    than that many parts in all)."""
    _left[0] = budget or None
    try:
        return _encode(value, depth)
    except Opaque:
        return opaque(value)


_left: list[int | None] = [None]
"""Parts the value being encoded may still have (None: no bound)."""


def loose(enc: Enc) -> Any:
    """The value again outside the box, with what is not plain data Live (an instance's opaque attributes too)."""
    tag = enc[0]
    if tag in ("?", "="):  # "=": the live object made again as an equal copy (sandbox/judge/heldout/built.py)
        return Live(enc)
    if tag == "o":
        return Obj(enc[1], tuple((str(k), loose(x)) for k, x in enc[2]))
    try:
        return decode(enc)
    except (ValueError, TypeError):
        return Live(enc)


def opaque(value: Any) -> Enc:
    t = type(value)
    try:
        text = _ADDRESS.sub(" at 0x…", repr(value)[: MAX_REPR * 4])
    except Exception:  # a repr that raises: the type says enough
        text = f"<{t.__name__}>"
    enc: Enc = ["?", f"{t.__module__}.{t.__qualname__}", text[:MAX_REPR]]
    if t in (list, tuple) and value and _sampling[0] < 2 and (_left[0] is None or _left[0] > 0):
        enc.append(_sample(value))
    return enc


_sampling = [0]  # samples under way: one inside another at most (a value that holds itself: twice, never more)


def _sample(value: list[Any] | tuple[Any, ...]) -> list[Enc]:
    """At most SAMPLE items spread over `value`, each encoded (opaque, with a sample of its own, where it is not
    plain), in at most SAMPLE_PARTS parts and half of what the encoding under way has left, charged to it."""
    outer = _left[0]
    pool = SAMPLE_PARTS if outer is None else min(SAMPLE_PARTS, outer // 2)
    _sampling[0] += 1
    try:
        out = []
        n = len(value)
        for i in sorted({k * n // SAMPLE for k in range(SAMPLE)}) if n > SAMPLE else range(n):
            cap = min(ITEM_PARTS, pool)
            if cap <= 0:
                break
            _left[0] = cap
            try:
                enc = _encode(value[i], MAX_DEPTH - 2)
            except Opaque:
                enc = opaque(value[i])
            pool -= cap - max(_left[0] or 0, 0)
            out.append(enc)
        return out
    finally:
        _sampling[0] -= 1
        _left[0] = None if outer is None else outer - (min(SAMPLE_PARTS, outer // 2) - pool)


def _encode(v: Any, depth: int) -> Enc:
    if depth > MAX_DEPTH:
        raise Opaque("too deep")
    left = _left[0]
    if left is not None:
        if left <= 0:
            raise Opaque("too big")
        _left[0] = left - 1
    t = type(v)
    if v is None:
        return ["n"]
    if t is bool:
        return ["b", v]
    if t is int:
        return ["i", str(v)]  # a ValueError past the digit limit: opaque
    if t is float:
        return ["f", repr(v)]
    if t is str:
        if len(v) > MAX_TEXT:
            raise Opaque("too long")
        return ["s", v]
    if t is bytes:
        if len(v) > MAX_TEXT:
            raise Opaque("too long")
        return ["y", v.hex()]
    if t in _SEQUENCES:
        if len(v) > MAX_ITEMS:
            raise Opaque("too many items")
        items = [_encode(x, depth + 1) for x in v]
        return [_SEQUENCES[t], sorted(items, key=repr) if t in (set, frozenset) else items]
    if t is dict:
        if len(v) > MAX_ITEMS:
            raise Opaque("too many items")
        return ["d", [[_encode(k, depth + 1), _encode(x, depth + 1)] for k, x in v.items()]]
    if isinstance(v, Live):
        return v.enc
    if isinstance(v, (Obj, Member)):
        return _placeholder(v, depth)
    if isinstance(v, Iter) or t in _std.ITERATORS:
        rest = v.items if isinstance(v, Iter) else _std.remaining(v)
        if len(rest) > MAX_ITEMS:
            raise Opaque("too many items")
        return ["it", [_encode(x, depth + 1) for x in rest]]
    if t in _std.STDLIB:
        return _std.STDLIB[t](v)
    moment = next((b for b in _std.MOMENTS if isinstance(v, b)), None)
    if moment is not None and not getattr(v, "__dict__", None):  # freezegun's FakeDatetime: its moment (the box
        return _std.STDLIB[moment](v)  # makes it again as the live argument's class where it has one: built.py)
    return _instance(v, t, depth)


def _placeholder(v: Any, depth: int) -> Enc:
    if isinstance(v, Member):
        return ["m", v.cls, v.name]
    if v.kind == "nt":
        return ["nt", v.cls, [_encode(x, depth + 1) for _, x in v.attrs]]
    return ["o", v.cls, [[k, _encode(x, depth + 1)] for k, x in v.attrs]]


def _instance(v: Any, t: type, depth: int) -> Enc:
    name = class_name(t)
    if name is None:
        raise Opaque("not importable")
    if any(c.__name__ == "Enum" and c.__module__ == "enum" for c in t.__mro__):
        return ["m", name, _std.member_name(v, t)]
    if isinstance(v, tuple) and hasattr(t, "_fields"):
        return ["nt", name, [_encode(x, depth + 1) for x in v]]
    state = getattr(v, "__dict__", None)
    if type(state) is not dict or len(state) > MAX_ITEMS or _slotted(t):
        raise Opaque("no plain state")
    if any(c.__module__ == "builtins" and c is not object and not _empty(v, c) for c in t.__mro__):
        raise Opaque("a built-in type underneath")  # a dict or list subclass: its items are not in __dict__
    return ["o", name, [[k, _part(x, depth + 1)] for k, x in state.items() if isinstance(k, str)]]


def _part(v: Any, depth: int) -> Enc:
    """An instance's attribute: opaque where it is not plain data (the instance is then not exact, but what of it is
    plain can still be varied where the live instance is at hand: sandbox/judge/heldout/inrun.py)."""
    try:
        return _encode(v, depth)
    except Opaque:
        if _left[0] is not None and _left[0] <= 0:
            raise
        return opaque(v)


def _empty(v: Any, builtin: type) -> bool:
    """Whether `v` keeps nothing in its built-in container's own storage (a list subclass that keeps its items in
    attributes of its own, as boltons' BarrelList does): its `__dict__` is then all its state."""
    return builtin in (list, dict, set) and builtin.__len__(v) == 0


def _slotted(t: type) -> bool:
    """Whether some class of `t` keeps attributes in slots (outside `__dict__`); an empty `__slots__ = ()`, as the
    abstract base classes of `collections.abc` have, keeps none."""
    return any(c.__dict__.get("__slots__") not in (None, (), [], "") for c in t.__mro__ if c is not object)


def decode(enc: Enc, resolve: Resolve | None = None) -> Any:
    """The value again; `resolve` (the box's) turns a class name into the class, else placeholders are made.
    Opaque when the value was not plain data."""
    tag = enc[0]
    if tag == "n":
        return None
    if tag in ("b", "s"):
        return enc[1]
    if tag == "i":
        return int(enc[1])
    if tag == "f":
        return float(enc[1])
    if tag == "y":
        return bytes.fromhex(enc[1])
    if tag in _std.BUILT:
        value = _std.BUILT[tag](enc[1])
        return _std.in_zone(value, enc[2]) if len(enc) > 2 and resolve else value
    if tag in _BUILD:
        return _BUILD[tag](decode(x, resolve) for x in enc[1])
    if tag == "d":
        return {decode(k, resolve): decode(v, resolve) for k, v in enc[1]}
    if tag == "m":
        return _std.member(resolve(enc[1]), enc[2]) if resolve else Member(enc[1], enc[2])
    if tag == "nt":
        items = [decode(x, resolve) for x in enc[2]]
        if resolve:
            return resolve(enc[1])(*items)
        return Obj(enc[1], tuple((str(n), x) for n, x in enumerate(items)), "nt")
    if tag == "it":
        items = [decode(x, resolve) for x in enc[1]]
        return iter(items) if resolve else Iter(tuple(items))
    if tag == "o":
        attrs = tuple((str(k), decode(x, resolve)) for k, x in enc[2])
        if not resolve:
            return Obj(enc[1], attrs)
        cls = resolve(enc[1])
        obj = cls.__new__(cls)
        obj.__dict__.update(attrs)
        return obj
    raise Opaque(f"{enc[1] if len(enc) > 1 else tag} is not plain data")


def exact(enc: Enc) -> bool:
    """Whether the value can be rebuilt (nothing opaque in it)."""
    tag = enc[0]
    if tag in ("?", "="):
        return False
    if tag in _BUILD or tag in ("nt", "it"):
        return all(exact(x) for x in enc[-1])
    if tag == "d":
        return all(exact(k) and exact(v) for k, v in enc[1])
    if tag == "o":
        return all(exact(x) for _, x in enc[2])
    return True


def show_enc(enc: Enc, limit: int = 60) -> str:
    if enc[0] in ("?", "="):
        return repr(Live(enc))[:limit]
    try:
        return show(loose(enc), limit)
    except (Opaque, ValueError, TypeError):
        return str(enc)[:limit]
