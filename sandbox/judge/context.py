"""The run's context, as the second judge's child takes it on before any repository code runs.

The tool server starts the judge once per context with its interpreter flags, working directory and
environment (sandbox/judging.py); here the child sets what a process can set for itself: the site packages
(the keeper starts with -S, so no .pth line runs where the key is), `sys.argv` and `sys.orig_argv`, a `__main__`
that is not the judge, and `sys.path` without the judge's folder. `dress` makes the run look like pytest's:
the real pytest imported (and unittest), faulthandler on, stdout and stderr captured, PYTEST_CURRENT_TEST and
PYTEST_VERSION set, argv as `python -m pytest` has it. What differs between contexts is what production never
sees; the host compares the outcomes (patcher/verify/judges/context.py). Standard library only; Python 3.9 to 3.13.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import importlib.util
import io
import os
import re
import sys
import types
from collections.abc import Callable
from typing import Any

_HERE = os.path.dirname(os.path.abspath(__file__))
FRAMEWORK = ("pytest", "_pytest", "pluggy", "unittest")
LAZY = ("pytest", "_pytest", "pluggy", "unittest")
WATCHED_FRAMEWORK = ("pytest", "_pytest.reports", "_pytest.runner", "_pytest.main", "_pytest.python",
                     "_pytest.outcomes", "_pytest.terminal", "_pytest.junitxml", "_pytest.nodes", "_pytest.fixtures",
                     "_pytest.capture", "_pytest.config", "_pytest.assertion.rewrite", "_pytest.assertion.util",
                     "_pytest.skipping", "_pytest.unittest", "pluggy", "pluggy._hooks", "pluggy._manager",
                     "pluggy._callers", "unittest", "unittest.case", "unittest.result", "unittest.runner",
                     "unittest.main", "unittest.suite", "unittest.loader")


class Entered:
    """What the child set up once, for every group's process."""

    def __init__(self, context: dict[str, Any]) -> None:
        self.context = context
        self.dressed = bool(context.get("dress"))
        self.pytest_main = ""
        self.framework: Framework | None = None
        self.parents = (os.getpid(), os.getppid())
        """The child's pid and the keeper's (a group's process runs under both)."""


def enter(context: dict[str, Any]) -> Entered:
    state = Entered(context)
    if sys.flags.no_site:
        import site
        site.main()
    sys.path[:] = [p for p in sys.path if p and os.path.abspath(p) != _HERE]
    if state.dressed:
        _dress(state)
    argv = [str(a) for a in context.get("argv") or [""]]
    _main_module(state.pytest_main if state.dressed else argv[0])
    set_argv(argv)
    return state


def tree(state: Entered, root: str) -> None:
    """In a group's process, its tree importable (roots.py), dressed as pytest: the tree as working directory."""
    if state.dressed:
        os.chdir(root)


def set_argv(argv: list[str]) -> None:
    sys.argv = list(argv)
    if hasattr(sys, "orig_argv"):
        sys.orig_argv = ["python", *argv] if argv and argv[0] else ["python"]


def _main_module(path: str) -> None:
    """A `__main__` that names no judge: an application script's, or pytest's own."""
    main = types.ModuleType("__main__")
    main.__dict__.update({"__builtins__": __builtins__, "__spec__": None, "__package__": None})
    if path:
        main.__file__ = path
        main.__loader__ = importlib.machinery.SourceFileLoader("__main__", path)  # as `python path` has it
    sys.modules["__main__"] = main


def _dress(state: Entered) -> None:
    import faulthandler
    state.framework = Framework()
    sys.meta_path.insert(0, state.framework)
    found = {name: state.framework.lazy(name) for name in LAZY}
    if not found["pytest"]:
        return
    state.pytest_main = os.path.join(os.path.dirname(found["pytest"]), "__main__.py")
    version = os.path.join(os.path.dirname(found["_pytest"]), "_version.py")
    with contextlib.suppress(Exception), open(version, encoding="utf-8") as f:  # as pytest 8.2+ sets it
        os.environ["PYTEST_VERSION"] = re.findall(r"version\s*=\s*['\"]([^'\"]+)", f.read())[0]
    os.environ.setdefault("PYTEST_ADDOPTS", "-p no:cacheprovider")
    os.environ.setdefault("CI", "true")
    with contextlib.suppress(Exception):
        faulthandler.enable(file=sys.__stderr__ or sys.stderr)


class Framework(importlib.abc.MetaPathFinder):
    """pytest, _pytest, pluggy and unittest in sys.modules as a pytest run has them, loaded only when something
    touches them (importing pytest costs a quarter of a second); each of their modules, once loaded, goes to `adopt`
    (the runtime judge watches it from then on, so a write that follows is seen)."""

    def __init__(self) -> None:
        self.adopt: Callable[[Any], None] = lambda module: None
        self.busy = False
        self.whole = False

    def lazy(self, name: str) -> str:
        """The module in sys.modules, not yet run; its file ("" when it is not installed)."""
        spec = importlib.machinery.PathFinder.find_spec(name)
        if spec is None or spec.loader is None:
            return ""
        spec.loader = importlib.util.LazyLoader(_Adopted(spec.loader, self))
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return str(spec.origin or "")

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if self.busy or name.split(".")[0] not in LAZY:
            return None
        self.busy = True
        try:
            spec = importlib.machinery.PathFinder.find_spec(name, path)
        finally:
            self.busy = False
        if spec is not None and spec.loader is not None:
            spec.loader = _Adopted(spec.loader, self)
        return spec


class _Adopted(importlib.abc.Loader):
    def __init__(self, loader: Any, framework: Framework) -> None:
        self.loader, self.framework = loader, framework

    def create_module(self, spec: Any) -> Any:
        return self.loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self.loader.exec_module(module)
        self.framework.adopt(module)
        if module.__name__ in ("_pytest", "pluggy") and not self.framework.whole:
            self.framework.whole = True  # touched at all, the framework is there whole, as in a pytest run
            getattr(sys.modules.get("pytest"), "__version__", None)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.loader, name)


def loaded(module: Any) -> bool:
    """Whether a module is there for real (touching a lazy one would load it)."""
    return type(module).__name__ != "_LazyModule"


class Case:
    """Per case in a dressed run: argv, PYTEST_CURRENT_TEST and captured output as pytest has them."""

    def __init__(self, state: Entered, node: str) -> None:
        self.state, self.node = state, node
        self.saved: tuple | None = None  # type: ignore[type-arg]

    def __enter__(self) -> Case:
        if not self.state.dressed:
            return self
        set_argv([self.state.pytest_main, "-q", self.node])
        os.environ["PYTEST_CURRENT_TEST"] = f"{self.node} (call)"
        self.saved = (sys.stdout, sys.stderr)
        sys.stdout, sys.stderr = _capture(), _capture()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.saved is not None:
            sys.stdout, sys.stderr = self.saved
        os.environ.pop("PYTEST_CURRENT_TEST", None)


class CaptureIO(io.TextIOWrapper):
    """What pytest's capture puts in sys.stdout (same name, same behaviour)."""

    def __init__(self) -> None:
        super().__init__(io.BytesIO(), encoding="UTF-8", newline="", write_through=True)

    def getvalue(self) -> str:
        assert isinstance(self.buffer, io.BytesIO)
        return self.buffer.getvalue().decode("UTF-8")


def _capture() -> Any:
    return CaptureIO()


def framework_modules() -> list[Any]:
    return [m for m in (sys.modules.get(n) for n in WATCHED_FRAMEWORK) if m is not None and loaded(m)]


class Keys:
    """A view of some sys.modules entries (the test framework's), as a mapping the observer can snapshot."""

    def __init__(self) -> None:
        self.names = [n for n in sys.modules if n.split(".")[0] in FRAMEWORK]

    def __iter__(self) -> Any:
        return iter(self.names)

    def values(self) -> list[Any]:
        return [sys.modules.get(n) for n in self.names]
