"""An instance the held-out judge varied, made again through its class's `__init__` (inrun.py), so that what
`__init__` does for every instance a program makes (a registry, a value kept aside, a derived attribute) is done
for the drawn ones too: a copy of the test's instance with attributes set never runs it.

Each parameter of the class's signature is filled from the attribute of its name (or `_name`); one with neither
must have a default. The class is first called with the test's own instance's attributes (the control): when
that does not give them back (an `__init__` that transforms its arguments), or raises, nothing is built and the
caller keeps its copy. An attribute the judge did not vary (asked as the base's run had it) is as the test's
instance has it on this side: left as `__init__` sets it where the control shows `__init__` sets it so (a value
derived from the parameters follows the drawn ones), else set from the test's instance (what the test set after
making it); an attribute the judge drew is set as drawn. Runs in the child forked for one input only.
Standard library only; Python 3.9 and later; loaded from its file, never put in sys.modules.
"""

from __future__ import annotations

import copy
import datetime
import inspect
from collections.abc import Callable
from typing import Any

_P = inspect.Parameter


def value(enc: Any, live: Any, rec: Any, plain: Any, resolve: Any) -> Any:
    """The value an input asks for: the live object where the host left it opaque; where the host varied a live
    instance's attributes, the instance made again through `__init__`, else a copy of the live one with them set
    (an attribute asked as the test's call had it on the base, `rec`, stays as this side's run made it); else
    rebuilt from plain data."""
    tag = enc[0] if isinstance(enc, list) and enc else None
    if tag == "?":
        return live
    if tag == "o" and live is not None and plain.class_name(type(live)) == enc[1]:
        was = dict(rec[2]) if isinstance(rec, list) and rec[:2] == enc[:2] else {}
        wanted = {str(k): value(e, getattr(live, str(k), None), was.get(k), plain, resolve)
                  for k, e in enc[2] if was.get(k) != e}  # only what the judge drew: the rest stays as this side's
        made = instance(live, wanted, {str(k) for k, _ in enc[2]}, plain.encode)
        if made is None:
            made = shallow(live)
            for key, got in wanted.items():
                setattr(made, key, got)
        return made
    if tag in ("t", "l") and isinstance(live, (tuple, list)) and live:
        olds = rec[1] if isinstance(rec, list) and rec[:1] == enc[:1] else []
        items = [value(e, live[min(i, len(live) - 1)], olds[min(i, len(olds) - 1)] if olds else None, plain, resolve)
                 for i, e in enumerate(enc[1])]
        return tuple(items) if tag == "t" else items
    made = plain.decode(enc, resolve)
    return _as_class_of(live, made) if tag in ("dtm", "date") and live is not None else made


def shallow(live: Any) -> Any:
    """A copy of the test's instance: its class's `__new__` and its `__dict__`, which the host's encoding holds to
    be all its state (sandbox/plain.py: a list or dict subclass only where its own storage is empty); `copy.copy`
    where that cannot be. Never by way of the class's own list methods: `copy.copy` of a list subclass appends its
    items one by one through them (boltons' BarrelList: a hundred thousand items, minutes)."""
    state = getattr(live, "__dict__", None)
    cls: Any = type(live)
    try:
        if type(state) is dict:
            made = cls.__new__(cls)
            made.__dict__.update(state)
            return made
    except Exception:  # a class whose __new__ takes arguments
        pass
    return copy.copy(live)


def again(live: Any, encode: Callable[[Any], Any], module: dict[str, Any]) -> Any:
    """An equal copy of the test's live object, made through its class: `__init__` fed from its attributes
    (`instance`), or a class called with no arguments whose instance's attributes then equal the live one's; the
    live object itself where none can be made (no `__dict__`, a class or function, a value the function's module
    holds, as a sentinel is, or a class whose copy would not be equal)."""
    state = getattr(live, "__dict__", None)
    if type(state) is not dict or isinstance(live, type) or callable(live) or any(
            v is live for v in module.values()):
        return live
    made = instance(live, {}, set(state), encode)
    if made is None:
        try:
            made = type(live)()
        except Exception:  # a class that needs arguments it cannot be given
            return live
    try:
        same = type(getattr(made, "__dict__", None)) is dict and encode(vars(made)) == encode(state)
    except Exception:
        same = False
    return made if same else live


def _as_class_of(live: Any, made: Any) -> Any:
    """A date or datetime made as the live argument's subclass of it (freezegun's FakeDatetime), where it is one."""
    cls = type(live)
    if cls is type(made) or not issubclass(cls, type(made)):
        return made
    try:
        if isinstance(made, datetime.datetime):
            return cls(made.year, made.month, made.day, made.hour, made.minute, made.second, made.microsecond,
                       tzinfo=made.tzinfo, fold=made.fold)
        return cls(made.year, made.month, made.day)
    except Exception:  # a subclass made otherwise: the moment as the standard library's type
        return made


def instance(live: Any, wanted: dict[str, Any], names: set[str], encode: Callable[[Any], Any]) -> Any:
    """An instance of `type(live)` made through `__init__` with the attributes the judge drew (`wanted`), the other
    recorded ones (`names`) as this side's run made them, or None where it cannot be (the caller then copies
    `live`)."""
    cls, state = type(live), getattr(live, "__dict__", None)
    if type(state) is not dict:
        return None
    try:
        params = list(inspect.signature(cls).parameters.values())
    except (TypeError, ValueError):
        return None
    used: list[tuple[str, Any]] = []
    for p in params:
        if p.kind in (_P.VAR_POSITIONAL, _P.VAR_KEYWORD):
            continue
        attr = next((a for a in (p.name, "_" + p.name) if a in state), None)
        if attr is None:
            if p.default is _P.empty or p.kind is _P.POSITIONAL_ONLY:
                return None
            continue
        used.append((attr, p))
    if not used:
        return None
    try:
        control = _make(cls, used, state)
        own = getattr(control, "__dict__", None)
        if type(own) is not dict or any(encode(own.get(a)) != encode(state[a]) for a, _ in used):
            return None
        made = _make(cls, used, {**state, **wanted})
        kept = {a for a in state if a in own and encode(own[a]) == encode(state[a])}
        params_of = {a for a, _ in used}
        for attr in names:
            if attr in wanted and attr not in params_of:
                setattr(made, attr, wanted[attr])
            elif attr not in wanted and attr not in kept and attr in state:
                setattr(made, attr, state[attr])  # as the test's instance has it on this side
        for attr in set(vars(made)) - set(state) - names:
            delattr(made, attr)  # what `__init__` makes past where the test's instance is (one still being made)
    except Exception:  # a class that cannot be made again with these values: the caller copies the test's instance
        return None
    return made


def _make(cls: type, used: list[tuple[str, Any]], values: dict[str, Any]) -> Any:
    args = [values[a] for a, p in used if p.kind is _P.POSITIONAL_ONLY]
    kwargs = {p.name: values[a] for a, p in used if p.kind is not _P.POSITIONAL_ONLY}
    return cls(*args, **kwargs)
