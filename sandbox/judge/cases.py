"""How the second judge turns a pytest node id into a call (patcher_judge.py loads this file): the module's
and the function's marks, `unittest.TestCase` methods called directly, and the `mark.parametrize` case whose id
pytest would give. Whatever it cannot read as pytest would is `Unjudged`: that test is judged by pytest alone.
Standard library only; loaded from its file, never put in sys.modules.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any


class Unjudged(Exception):
    """The test needs something this runner does not provide: it is judged by pytest alone."""


def marks(obj: Any) -> list[Any]:
    got = getattr(obj, "pytestmark", [])
    return [m for m in (got if isinstance(got, list) else [got]) if hasattr(m, "name")]


def is_testcase(cls: Any) -> bool:
    return isinstance(cls, type) and any(
        c.__name__ == "TestCase" and c.__module__ == "unittest.case" for c in cls.__mro__)


def testcase(cls: Any, method: str, wrap: Callable[[Any], None] = lambda case: None) -> Callable[[], None]:
    """setUpClass, setUp, the method, tearDown, the cleanups, tearDownClass: called directly (`wrap` sees the
    instance first: the values judge notes what its assert methods compare)."""
    if getattr(getattr(cls, method), "__unittest_expecting_failure__", False):
        raise Unjudged("an expected-failure test")

    def call() -> None:
        cls.setUpClass()
        try:
            inst = cls(method)
            wrap(inst)
            try:
                inst.setUp()
                try:
                    getattr(inst, method)()
                finally:
                    inst.tearDown()
            finally:
                inst.doCleanups()
        finally:
            cls.tearDownClass()
            cls.doClassCleanups()
    return call


def parametrized(func: Any, param_id: str | None) -> dict[str, Any]:
    """The arguments of the parametrize case whose id pytest would give as `param_id`."""
    sets = [m for m in marks(func) if m.name == "parametrize"]
    if not sets:
        if param_id is not None:
            raise Unjudged("a parametrized id with no parametrize mark the judge can read")
        return {}
    axes = [_cases(m) for m in sets]
    for combo in itertools.product(*reversed(axes)):
        pid = "-".join(c[0] for c in reversed(combo))
        if pid == param_id:
            out: dict[str, Any] = {}
            for _, args, xfail in combo:
                if xfail:
                    raise Unjudged("an xfail parameter")
                out.update(args)
            return out
    raise Unjudged(f"no parametrize case has the id {param_id!r}")


def _cases(m: Any) -> list[tuple[str, dict[str, Any], bool]]:
    argnames, values = m.args[0], list(m.args[1]) if len(m.args) > 1 else list(m.kwargs.get("argvalues", []))
    names = [n.strip() for n in argnames.split(",")] if isinstance(argnames, str) else list(argnames)
    ids = m.kwargs.get("ids")
    if m.kwargs.get("indirect"):
        raise Unjudged("indirect parametrization")
    out: list[tuple[str, dict[str, Any], bool]] = []
    for n, raw in enumerate(values):
        given = getattr(raw, "id", None) if type(raw).__name__ == "ParameterSet" else None
        xfail = any(getattr(k, "mark", k).name == "xfail" for k in getattr(raw, "marks", ())) \
            if type(raw).__name__ == "ParameterSet" else False
        vals = raw.values if type(raw).__name__ == "ParameterSet" else (raw if len(names) > 1 else (raw,))
        pid = _escaped(given) if isinstance(given, str) else given
        if pid is None and isinstance(ids, (list, tuple)) and n < len(ids) and ids[n] is not None:
            pid = _escaped(ids[n]) if isinstance(ids[n], (str, bytes)) else _idval(ids[n], "", n)
        if pid is None and callable(ids):
            got = [ids(v) for v in vals]
            pid = "-".join(g if g is not None else _idval(v, k, n) for g, v, k in zip(got, vals, names))
        if pid is None:
            pid = "-".join(_idval(v, k, n) for v, k in zip(vals, names))
        out.append((pid, dict(zip(names, vals)), xfail))
    seen = [p for p, _, _ in out]
    if len(set(seen)) < len(seen):  # pytest makes repeated ids unique with a counter
        counts: dict[str, int] = {}
        fixed = []
        for pid, args, xf in out:
            if seen.count(pid) > 1:
                counts[pid] = counts.get(pid, -1) + 1
                pid = f"{pid}{counts[pid]}"
            fixed.append((pid, args, xf))
        out = fixed
    return out


_UNPRINTABLE = {**{i: f"\\x{i:02x}" for i in range(128) if i not in range(32, 127)},
                ord("\t"): "\\t", ord("\r"): "\\r", ord("\n"): "\\n"}


def _escaped(value: str | bytes) -> str:
    """As pytest spells a text or bytes in an id (its ascii_escaped): `\\n` for a newline, `\\xNN`, `\\uNNNN`."""
    text = value.decode("ascii", "backslashreplace") if isinstance(value, bytes) else \
        value.encode("unicode_escape").decode("ascii")
    return text.translate(_UNPRINTABLE)


def _idval(value: Any, argname: str, n: int) -> str:
    if isinstance(value, (str, bytes)):
        return _escaped(value)
    if value is None or isinstance(value, (int, float, complex, bool)):
        return str(value)
    if type(value).__name__ == "Pattern" and type(value).__module__ == "re":  # by name: the judge imports no re
        return _escaped(value.pattern)
    if any(c.__name__ == "Enum" and c.__module__ == "enum" for c in type(value).__mro__):
        return str(value)
    if isinstance(getattr(value, "__name__", None), str):
        return str(value.__name__)
    return f"{argname}{n}"
