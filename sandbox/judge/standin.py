"""What the second judge hands a test module for `import pytest`: a stand-in, no pytest machinery.

Loaded by patcher_judge.py under the name `pytest` for the test modules and conftest files only (their
`__import__` returns it); it is never put in sys.modules, so code under test that looks for a test framework
finds none. It has the parts plain tests lean on: `mark.*` (parametrize is read by the judge), `param`,
`raises`, `warns`, `deprecated_call`, `fail`, `skip`, `importorskip`, `fixture`; and, set here by the judge when
it loads them, the `monkeypatch` and `capsys` fixtures' classes (fixtures.py) and `approx` (operands.py: the
keeper redoes a comparison with an approx by the same code).
Any other name is a placeholder type, so annotations such as `pytest.MonkeyPatch` or `pytest.CaptureFixture[str]`
still evaluate. Standard library only.
"""

from __future__ import annotations

import importlib
import re
import warnings
from collections.abc import Callable
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
    marks = tuple(marks) if isinstance(marks, (list, tuple)) else (marks,)
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
        got = super().__enter__()  # the log: an empty list, which is falsy (never `or []`: that is another list)
        self.list = got if got is not None else []
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


def approx(expected: Any, rel: float | None = None, abs: float | None = None, nan_ok: bool = False) -> Any:
    """Replaced by the judge with operands.approx (the keeper redoes a comparison with it by the same code)."""
    raise Failed("pytest.approx outside the judge")


class _Placeholder:
    def __class_getitem__(cls, item: Any) -> Any:
        return cls


def __getattr__(name: str) -> Any:
    """Any other public name: a placeholder type (for annotations); the judge does not run what needs it."""
    if name.startswith("__"):
        raise AttributeError(name)
    return type(name, (_Placeholder,), {})
