"""What the second judge hands a test module for `import pytest`: a stand-in, no pytest machinery.

Loaded by patcher_judge.py under the name `pytest` for the test modules and conftest files only (their
`__import__` returns it); it is never put in sys.modules, so code under test that looks for a test framework
finds none. It has the parts plain tests lean on: `mark.*` (parametrize is read by the judge), `param`,
`raises`, `approx`, `warns`, `deprecated_call`, `fail`, `skip`, `importorskip`, `fixture`, and the
`monkeypatch` and `capsys` fixtures' classes. Any other name is a placeholder type, so annotations such as
`pytest.MonkeyPatch` or `pytest.CaptureFixture[str]` still evaluate. Standard library only.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import math
import os
import re
import sys
import warnings
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple


class Skipped(BaseException):
    """pytest.skip(): the judge records the test as skipped (which never agrees with a pytest pass)."""


class Failed(AssertionError):
    """pytest.fail()."""


def fail(reason: str = "", pytrace: bool = True) -> None:
    raise Failed(reason)


def skip(reason: str = "", allow_module_level: bool = False) -> None:
    raise Skipped(reason)


def xfail(reason: str = "") -> None:
    raise Skipped("xfail: " + reason)


def importorskip(modname: str, minversion: str | None = None, reason: str | None = None) -> Any:
    try:
        return importlib.import_module(modname)
    except ImportError as e:
        raise Skipped(reason or str(e)) from None


class Mark:
    def __init__(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        self.name, self.args, self.kwargs = name, args, kwargs


class MarkDecorator:
    """`pytest.mark.NAME`, `pytest.mark.NAME(args)`, applied to a function or class: kept on `pytestmark`."""

    def __init__(self, name: str, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None) -> None:
        self.mark = Mark(name, args, kwargs or {})

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and not kwargs and (callable(args[0]) or isinstance(args[0], type)):
            target = args[0]
            marks = list(getattr(target, "pytestmark", []))
            target.pytestmark = [*marks, self.mark]
            return target
        return MarkDecorator(self.mark.name, self.mark.args + args, {**self.mark.kwargs, **kwargs})


class _MarkGenerator:
    def __getattr__(self, name: str) -> MarkDecorator:
        if name.startswith("__"):
            raise AttributeError(name)
        return MarkDecorator(name)


mark = _MarkGenerator()


class ParameterSet(NamedTuple):
    values: tuple[Any, ...]
    marks: tuple[Any, ...]
    id: str | None


def param(*values: Any, marks: Any = (), id: str | None = None) -> ParameterSet:
    marks = tuple(marks) if isinstance(marks, list | tuple) else (marks,)
    return ParameterSet(values, marks, id)


class FixtureDef:
    """What `@pytest.fixture` leaves on a function: the judge calls fixtures of the test's own module."""

    def __init__(self, func: Callable[..., Any], name: str | None, autouse: bool, params: Any) -> None:
        self.func, self.name, self.autouse, self.params = func, name or func.__name__, autouse, params


def fixture(func: Callable[..., Any] | None = None, *, scope: Any = "function", params: Any = None,
            autouse: bool = False, ids: Any = None, name: str | None = None) -> Any:
    def wrap(f: Callable[..., Any]) -> Callable[..., Any]:
        f._judge_fixture = FixtureDef(f, name, autouse, params)  # type: ignore[attr-defined]
        return f
    return wrap(func) if func is not None else wrap


class ExceptionInfo:
    def __init__(self) -> None:
        self.value: BaseException | None = None
        self.type: type[BaseException] | None = None
        self.tb: Any = None

    def match(self, regexp: str | re.Pattern[str]) -> bool:
        if not re.search(regexp, str(self.value)):
            raise AssertionError(f"Regex pattern {regexp!r} does not match {str(self.value)!r}.")
        return True

    def errisinstance(self, exc: Any) -> bool:
        return isinstance(self.value, exc)


class _Raises:
    def __init__(self, expected: Any, match: str | re.Pattern[str] | None) -> None:
        self.expected, self.match_expr, self.info = expected, match, ExceptionInfo()

    def __enter__(self) -> ExceptionInfo:
        return self.info

    def __exit__(self, typ: Any, value: Any, tb: Any) -> bool:
        if typ is None:
            raise Failed(f"DID NOT RAISE {self.expected}")
        if not issubclass(typ, self.expected):
            return False
        self.info.value, self.info.type, self.info.tb = value, typ, tb
        if self.match_expr is not None:
            self.info.match(self.match_expr)
        return True


def raises(expected: Any, *args: Any, match: str | re.Pattern[str] | None = None, **kwargs: Any) -> Any:
    ctx = _Raises(expected, match)
    if not args:
        return ctx
    with ctx as info:
        args[0](*args[1:], **kwargs)
    return info


class _Warns(warnings.catch_warnings):
    def __init__(self, expected: Any, match: str | None) -> None:
        super().__init__(record=True)
        self.expected, self.match_expr = expected, match
        self.list: list[warnings.WarningMessage] = []

    def __enter__(self) -> Any:
        self.list = super().__enter__() or []
        warnings.simplefilter("always")
        return self.list

    def __exit__(self, *exc: Any) -> None:
        super().__exit__(*exc)
        if exc[0] is not None:
            return
        ok = [w for w in self.list if issubclass(w.category, self.expected)
              and (self.match_expr is None or re.search(self.match_expr, str(w.message)))]
        if not ok:
            raise Failed(f"DID NOT WARN: {self.expected}")


def warns(expected: Any = Warning, *args: Any, match: str | None = None, **kwargs: Any) -> Any:
    ctx = _Warns(expected, match)
    if not args:
        return ctx
    with ctx:
        return args[0](*args[1:], **kwargs)


def deprecated_call(*args: Any, **kwargs: Any) -> Any:
    return warns((DeprecationWarning, PendingDeprecationWarning), *args, **kwargs)


class ApproxBase:
    def __init__(self, expected: Any, rel: float | None = None, abs: float | None = None) -> None:
        self.expected, self.rel, self.abs = expected, rel, abs

    def _close(self, actual: Any, expected: Any) -> bool:
        if isinstance(expected, dict):
            return isinstance(actual, dict) and actual.keys() == expected.keys() and all(
                self._close(actual[k], expected[k]) for k in expected)
        if isinstance(expected, list | tuple):
            return (isinstance(actual, list | tuple) and len(actual) == len(expected)
                    and all(self._close(a, e) for a, e in zip(actual, expected, strict=True)))
        if not isinstance(expected, int | float | complex) or isinstance(expected, bool):
            return bool(actual == expected)
        try:
            if actual == expected:
                return True
            rel = self.rel if self.rel is not None else (0.0 if self.abs is not None else 1e-6)
            tolerance = max(rel * abs(expected), self.abs if self.abs is not None else 1e-12)
            gap = abs(actual - expected)
            return not math.isnan(gap) and bool(gap <= tolerance)
        except TypeError:
            return False

    def __eq__(self, actual: object) -> bool:
        return self._close(actual, self.expected)

    def __ne__(self, actual: object) -> bool:
        return not self == actual

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"approx({self.expected!r})"


def approx(expected: Any, rel: float | None = None, abs: float | None = None, nan_ok: bool = False) -> ApproxBase:
    return ApproxBase(expected, rel, abs)


_NOTSET = object()


class MonkeyPatch:
    """The `monkeypatch` fixture: every change is undone when the test ends."""

    def __init__(self) -> None:
        self._undo: list[Callable[[], None]] = []

    @classmethod
    @contextlib.contextmanager
    def context(cls) -> Iterator[MonkeyPatch]:
        mp = cls()
        try:
            yield mp
        finally:
            mp.undo()

    def setattr(self, target: Any, name: Any, value: Any = _NOTSET, raising: bool = True) -> None:
        if value is _NOTSET:  # setattr("pkg.mod.attr", value)
            value = name
            path, _, name = str(target).rpartition(".")
            target = _resolve(path)
        old = getattr(target, name, _NOTSET)
        if old is _NOTSET and raising:
            raise AttributeError(f"{target!r} has no attribute {name!r}")
        if isinstance(target, type):
            old = target.__dict__.get(name, _NOTSET)
        setattr(target, name, value)
        self._undo.append(lambda: setattr(target, name, old) if old is not _NOTSET else delattr(target, name))

    def delattr(self, target: Any, name: Any = _NOTSET, raising: bool = True) -> None:
        if name is _NOTSET:
            path, _, name = str(target).rpartition(".")
            target = _resolve(path)
        if not hasattr(target, name):
            if raising:
                raise AttributeError(name)
            return
        old = getattr(target, name)
        delattr(target, name)
        self._undo.append(lambda: setattr(target, name, old))

    def setitem(self, mapping: Any, key: Any, value: Any) -> None:
        old = mapping.get(key, _NOTSET) if hasattr(mapping, "get") else mapping[key]
        mapping[key] = value
        self._undo.append(lambda: mapping.__setitem__(key, old) if old is not _NOTSET else mapping.pop(key, None))

    def delitem(self, mapping: Any, key: Any, raising: bool = True) -> None:
        if key not in mapping:
            if raising:
                raise KeyError(key)
            return
        old = mapping.pop(key)
        self._undo.append(lambda: mapping.__setitem__(key, old))

    def setenv(self, name: str, value: str, prepend: str | None = None) -> None:
        value = str(value)
        if prepend and name in os.environ:
            value = value + prepend + os.environ[name]
        self.setitem(os.environ, name, value)

    def delenv(self, name: str, raising: bool = True) -> None:
        self.delitem(os.environ, name, raising)

    def syspath_prepend(self, path: Any) -> None:
        sys.path.insert(0, str(path))
        self._undo.append(lambda: sys.path.remove(str(path)) if str(path) in sys.path else None)

    def chdir(self, path: Any) -> None:
        old = os.getcwd()
        os.chdir(path)
        self._undo.append(lambda: os.chdir(old))

    def undo(self) -> None:
        while self._undo:
            self._undo.pop()()


def _resolve(path: str) -> Any:
    parts = path.split(".")
    for n in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:n]))
        except ImportError:
            continue
        for attr in parts[n:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(path)


class CaptureResult(NamedTuple):
    out: str
    err: str


class CaptureFixture:
    """The `capsys` fixture: sys.stdout and sys.stderr go to buffers until the test ends."""

    def __init__(self) -> None:
        self._saved = (sys.stdout, sys.stderr)
        self._out, self._err = io.StringIO(), io.StringIO()
        sys.stdout, sys.stderr = self._out, self._err

    def readouterr(self) -> CaptureResult:
        got = CaptureResult(self._out.getvalue(), self._err.getvalue())
        for buf in (self._out, self._err):
            buf.seek(0)
            buf.truncate()
        return got

    @contextlib.contextmanager
    def disabled(self) -> Iterator[None]:
        sys.stdout, sys.stderr = self._saved
        try:
            yield
        finally:
            sys.stdout, sys.stderr = self._out, self._err

    def close(self) -> None:
        sys.stdout, sys.stderr = self._saved


class _Placeholder:
    def __class_getitem__(cls, item: Any) -> Any:
        return cls


def __getattr__(name: str) -> Any:
    """Any other public name: a placeholder type (for annotations); the judge does not run what needs it."""
    if name.startswith("__"):
        raise AttributeError(name)
    return type(name, (_Placeholder,), {})
