"""What sandbox/plain.py's spelling is made of beside its encoder: values of the standard library (dates, times
and durations, naive, at a fixed offset or in a named zone; decimals, fractions, ranges, iterators over a
sequence; members of an Enum, a combination of flags by its members' names) and the host's stand-ins for what only
the box can make again (an instance, a member, an iterator, a live object). Standard library only; plain.py loads
this file by its path, in the box's processes and on the host alike.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable
from decimal import Decimal
from fractions import Fraction
from typing import Any

MAX_ITEMS = 100
Enc = list[Any]


def show(value: Any, limit: int = 60) -> str:
    """A short repr for people (quotes in messages)."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


class Obj:
    """An instance (kind "o") or named tuple (kind "nt") by its class's name, outside the box: the host's stand-in,
    hashable so that it may sit in a set or key a dict."""

    def __init__(self, cls: str, attrs: tuple[tuple[str, Any], ...], kind: str = "o") -> None:
        self.cls, self.attrs, self.kind = cls, attrs, kind

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Obj) and (self.cls, self.attrs, self.kind) == (other.cls, other.attrs, other.kind)

    def __hash__(self) -> int:
        return hash((self.cls, self.attrs, self.kind))

    def __repr__(self) -> str:
        name = self.cls.rpartition(":")[2]
        if self.kind == "nt":
            return f"{name}({', '.join(show(v) for _, v in self.attrs)})"
        return f"{name}({', '.join(f'{k}={show(v)}' for k, v in self.attrs)})"


class Member:
    """An Enum member by its class's name, outside the box."""

    def __init__(self, cls: str, name: str) -> None:
        self.cls, self.name = cls, name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Member) and (self.cls, self.name) == (other.cls, other.name)

    def __hash__(self) -> int:
        return hash((self.cls, self.name))

    def __repr__(self) -> str:
        return f"{self.cls.rpartition(':')[2]}.{self.name}"


class Live:
    """Outside the box: a value that is not plain data, as recorded (its opaque entry); asked inside the test's own
    run it stands for the live object the test passed there (encode gives its entry back)."""

    def __init__(self, enc: Enc) -> None:
        self.enc = enc

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Live) and self.enc == other.enc

    def __hash__(self) -> int:
        return hash(repr(self.enc))

    def __repr__(self) -> str:
        if self.enc[0] == "=":
            return f"{Live(self.enc[1])!r} (an equal copy)"
        return str(self.enc[2]) if len(self.enc) > 2 else "<live>"


class Iter:
    """An iterator over a sequence, outside the box: the items it has still to give (sandbox side: `iter(list)`)."""

    def __init__(self, items: tuple[Any, ...]) -> None:
        self.items = items

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Iter) and self.items == other.items

    def __hash__(self) -> int:
        return hash(("iter", self.items))

    def __repr__(self) -> str:
        return f"iter({show(list(self.items))})"


class Opaque(ValueError):
    """A value that is not plain data: it cannot be rebuilt."""


def naive(tag: str) -> Callable[[Any], Enc]:
    """Naive, or at a fixed offset (datetime.timezone: its isoformat gives it back); a datetime in a named zone
    (zoneinfo's) with the zone's key beside its offset; another time zone is opaque."""
    def enc(v: Any) -> Enc:
        zone = getattr(v, "tzinfo", None)
        if zone is None or type(zone) is _dt.timezone:
            return [tag, v.isoformat()]
        key = getattr(zone, "key", None)
        if tag == "dtm" and type(zone).__module__ == "zoneinfo" and isinstance(key, str):
            return [tag, v.isoformat(), key]
        raise Opaque("a time zone")
    return enc


def in_zone(value: Any, key: str) -> Any:
    """The same instant in the named zone (the host, which may lack the zone, keeps the offset alone)."""
    import zoneinfo

    return value.astimezone(zoneinfo.ZoneInfo(key))


STDLIB: dict[type, Callable[[Any], Enc]] = {
    Decimal: lambda v: ["dec", str(v)], Fraction: lambda v: ["fr", str(v)], _dt.date: naive("date"),
    _dt.datetime: naive("dtm"), _dt.time: naive("tm"), _dt.timedelta: lambda v: ["td", repr(v.total_seconds())],
    range: lambda v: ["rg", f"{v.start},{v.stop},{v.step}"]}
"""Values of the standard library rebuilt through their own constructors (exact types only: a subclass is the
repository's, an instance like any other)."""
MOMENTS = (_dt.datetime, _dt.date, _dt.time)
"""Their subclasses with no state of their own are encoded as their moment."""
BUILT: dict[str, Callable[[str], Any]] = {
    "dec": Decimal, "fr": Fraction, "date": _dt.date.fromisoformat, "dtm": _dt.datetime.fromisoformat,
    "tm": _dt.time.fromisoformat, "td": lambda s: _dt.timedelta(seconds=float(s)),
    "rg": lambda s: range(*(int(n) for n in s.split(",")))}
ITERATORS = {type(iter([])), type(iter(())), type(iter("")), type(iter(range(0))), type(reversed([]))}
"""Iterators whose `__reduce__` gives their sequence and position without taking an item."""


def remaining(v: Any) -> tuple[Any, ...]:
    """The items an iterator of _ITERATORS has still to give, in order (read from `__reduce__`: none taken)."""
    fn, args, *state = v.__reduce__()
    seq = args[0] if args else ()
    at = int(state[0]) if state and state[0] is not None else 0
    rest = (seq[: at + 1][::-1] if at >= 0 else ()) if fn is reversed else seq[at:]
    if len(rest) > MAX_ITEMS:  # before a range's items are made
        raise Opaque("too many items")
    return tuple(rest)


def member_name(v: Any, t: Any) -> str:
    """An enum member's name; a combination of flags (`re.IGNORECASE|re.DOTALL`: no name of its own before Python
    3.11) as its single-bit members' names joined by `|` (`""`: none set)."""
    if isinstance(v.name, str) and "|" not in v.name:
        return v.name
    value = v.value
    if not isinstance(value, int):
        raise Opaque("an enum member with no name")
    bits = [m for m in t if isinstance(m.value, int) and m.value > 0 and m.value & (m.value - 1) == 0
            and value & m.value]
    if sum({m.value for m in bits}) != value:
        raise Opaque("a combination of flags not made of named ones")
    return "|".join(m.name for m in bits)


def member(cls: Any, name: str) -> Any:
    """The member `member_name` names: a combination of flags made again by `|`."""
    if "|" not in name and name:
        return getattr(cls, name)
    made = cls(0)
    for part in filter(None, name.split("|")):
        made |= getattr(cls, part)
    return made
