"""The `monkeypatch` and `capsys` fixtures of the second judge (patcher_judge.py hands them to tests, and
standin.py's `pytest.MonkeyPatch` / `pytest.CaptureFixture` are these classes). Standard library only;
loaded from its file, never put in sys.modules.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

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
