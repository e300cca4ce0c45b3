"""The fixtures a test asks for, as the second judge provides them (patcher_judge.py loads this file).

A name is looked up as pytest would: the test module's own fixtures, then the conftest files' from the test's
folder up to the root (the nearest first), then the builtin ones (`tmp_path`, `monkeypatch`, `capsys`, and a
small `request`: `addfinalizer`, `getfixturevalue`, `fixturename`, `node.name`; `doctest_namespace`, an empty
dict; `recwarn`, the warnings raised while the test runs). Autouse fixtures of the
conftest files (the root's first) and of the module, and the names a `usefixtures` mark asks for, are set up
before the test; a generator fixture's teardown runs after it, in reverse order. A fixture with params, or a name
nothing here provides, makes the test Unjudged: it is judged by pytest alone. Each fixture is made once a test
(whatever its scope). Standard library only; Python 3.9 to 3.13; loaded from its file, never put in sys.modules.
"""

from __future__ import annotations

import inspect
import pathlib
import tempfile
from collections.abc import Callable
from typing import Any

BUILTIN = ("tmp_path", "monkeypatch", "capsys", "request", "doctest_namespace", "recwarn")


class Request:
    """What a fixture may ask of pytest's `request` outside pytest; anything else raises AttributeError (the test
    then fails on the base too, and is judged once)."""

    def __init__(self, provider: Provider, test: str) -> None:
        self._provider, self.fixturename = provider, ""
        self.node = type("Node", (), {"name": test, "nodeid": test})()

    def addfinalizer(self, finalizer: Callable[[], Any]) -> None:
        self._provider.cleanup.append(finalizer)

    def getfixturevalue(self, name: str) -> Any:
        return self._provider.value(name)


class Recorded(list):  # type: ignore[type-arg]
    """What pytest's `recwarn` gives: the warnings raised while the test runs (`pop` takes the first of a class)."""

    def pop(self, cls: type = Warning) -> Any:  # type: ignore[override]
        for n, w in enumerate(self):
            if issubclass(w.category, cls):
                return super().pop(n)
        raise AssertionError(f"{cls!r} not found in warning list")

    @property
    def list(self) -> list[Any]:
        return list(self)

    def clear(self) -> None:
        del self[:]


class Provider:
    """One test's fixtures: `arguments` gives what the test function asks for (after the autouse ones)."""

    def __init__(self, judge: Any, unjudged: type[Exception], fixtures_of: Callable[[Any], dict[str, Any]],
                 scopes: list[Any], test: str, cleanup: list[Callable[[], None]]) -> None:
        self.judge, self.unjudged, self.cleanup = judge, unjudged, cleanup
        self.scopes = [fixtures_of(m) for m in scopes]
        """Fixtures by name, the nearest scope first: the module's, then each conftest's up to the root."""
        self.made: dict[str, Any] = {}
        self.test = test

    def arguments(self, func: Any, params: dict[str, Any], wanted_too: list[str]) -> dict[str, Any]:
        """The autouse fixtures set up (the root's first), then `wanted_too` (usefixtures), then the test's."""
        for scope in reversed(self.scopes):
            for fx in [f for f in scope.values() if f.autouse]:
                self.value(fx.name)
        for name in wanted_too:
            self.value(name)
        signature = inspect.signature(func).parameters
        wanted = [n for n, p in signature.items()
                  if n != "self" and p.default is inspect.Parameter.empty and n not in params]
        args = dict(params)
        for name in wanted:
            args[name] = self.value(name)
        return {k: v for k, v in args.items() if k in signature}

    def value(self, name: str, below: int = 0) -> Any:
        """The fixture `name`, made once; a fixture asking for its own name gets the one of an outer scope."""
        if name in self.made and below == 0:
            return self.made[name]
        found = next(((n, s[name]) for n, s in enumerate(self.scopes) if n >= below and name in s), None)
        if found is not None:
            value = self._call(found[1], found[0])
        elif name in BUILTIN:
            value = self._builtin(name)
        else:
            raise self.unjudged(f"fixture {name!r} is not one this judge provides (a plugin's fixture)")
        if below == 0:
            self.made[name] = value
        return value

    def _call(self, fx: Any, level: int) -> Any:
        if fx.params is not None:
            raise self.unjudged(f"fixture {fx.name} has params")
        deps = [n for n, p in inspect.signature(fx.func).parameters.items() if p.default is inspect.Parameter.empty]
        args = {d: self.value(d, level + 1 if d == fx.name else 0) for d in deps}
        value = fx.func(**args)
        if inspect.isgenerator(value):
            gen, value = value, next(value)

            def finish() -> None:
                next(gen, None)
            self.cleanup.append(finish)
        return value

    def _recwarn(self) -> Recorded:
        import warnings

        catcher = warnings.catch_warnings(record=True)
        catcher.__enter__()
        warnings.simplefilter("always")
        recorded = Recorded()
        warnings._showwarnmsg_impl = recorded.append  # type: ignore[attr-defined]  # where record=True puts them
        self.cleanup.append(lambda: catcher.__exit__(None, None, None))
        return recorded

    def _builtin(self, name: str) -> Any:
        if name == "tmp_path":
            return pathlib.Path(tempfile.mkdtemp(dir=self.judge.tmp))
        if name == "request":
            return Request(self, self.test)
        if name == "doctest_namespace":
            return {}
        if name == "recwarn":
            return self._recwarn()
        standin = self.judge.standin
        fixture = standin.MonkeyPatch() if name == "monkeypatch" else standin.CaptureFixture()
        self.cleanup.append(fixture.undo if name == "monkeypatch" else fixture.close)
        return fixture
