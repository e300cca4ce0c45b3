"""The run's context, as the second judge's child takes it on before any repository code runs.

The tool server starts the judge once per context with its interpreter flags, working directory and
environment (sandbox/judging.py); here the child sets what a process can set for itself: the site packages
(the keeper starts with -S, so no .pth line runs where the key is), `sys.argv` and `sys.orig_argv`, a `__main__`
that is not the judge, and `sys.path` without the judge's folder. `dress` makes the run look like pytest's:
the real pytest imported (and unittest), faulthandler on, stdout and stderr captured, PYTEST_CURRENT_TEST and
PYTEST_VERSION set, argv as `python -m pytest` has it. What differs between contexts is what production never
sees; the host compares the outcomes (patcher/verify/contexts.py). Standard library only; Python 3.9 to 3.13.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import types
from typing import Any

_HERE = os.path.dirname(os.path.abspath(__file__))
FRAMEWORK = ("pytest", "_pytest", "pluggy", "unittest")
WATCHED_FRAMEWORK = ("pytest", "_pytest.reports", "_pytest.runner", "_pytest.main", "_pytest.python",
                     "_pytest.outcomes", "_pytest.terminal", "_pytest.junitxml", "_pytest.nodes", "_pytest.fixtures",
                     "_pytest.capture", "_pytest.config", "_pytest.assertion.rewrite", "_pytest.assertion.util",
                     "_pytest.skipping", "_pytest.unittest", "pluggy", "pluggy._hooks", "pluggy._manager",
                     "pluggy._callers", "unittest", "unittest.case", "unittest.result", "unittest.runner",
                     "unittest.main", "unittest.suite", "unittest.loader")


class Entered:
    """What the child set up once, for every group's process."""

    def __init__(self, context: dict[str, Any], root: str) -> None:
        self.context, self.root = context, root
        self.dressed = bool(context.get("dress"))
        self.pytest_main = ""


def enter(context: dict[str, Any], root: str) -> Entered:
    state = Entered(context, root)
    if sys.flags.no_site:
        import site
        site.main()
    sys.path[:] = [p for p in sys.path if p and os.path.abspath(p) != _HERE]
    for path in (root, os.path.join(root, "src")):
        if os.path.isdir(path) and path not in sys.path:
            sys.path.append(path)
    if state.dressed:
        _dress(state)
    argv = [str(a) for a in context.get("argv") or [""]]
    _main_module(state.pytest_main if state.dressed else argv[0])
    set_argv(argv)
    return state


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
    sys.modules["__main__"] = main


def _dress(state: Entered) -> None:
    import faulthandler
    import unittest  # noqa: F401  (as a pytest run has it loaded)
    try:
        import pytest
    except ImportError:
        return
    state.pytest_main = os.path.join(os.path.dirname(pytest.__file__), "__main__.py")
    os.environ["PYTEST_VERSION"] = str(getattr(pytest, "__version__", ""))
    os.environ.setdefault("PYTEST_ADDOPTS", "-p no:cacheprovider")
    os.environ.setdefault("CI", "true")
    with contextlib.suppress(Exception):
        faulthandler.enable(file=sys.__stderr__ or sys.stderr)


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


def _capture() -> Any:
    try:
        from _pytest.capture import CaptureIO
        return CaptureIO()
    except Exception:
        return io.TextIOWrapper(io.BytesIO(), encoding="UTF-8", newline="", write_through=True)


def framework_modules() -> list[Any]:
    return [m for m in (sys.modules.get(n) for n in WATCHED_FRAMEWORK) if m is not None]


class Keys:
    """A view of some sys.modules entries (the test framework's), as a mapping the observer can snapshot."""

    def __init__(self) -> None:
        self.names = [n for n in sys.modules if n.split(".")[0] in FRAMEWORK]

    def __iter__(self) -> Any:
        return iter(self.names)

    def values(self) -> list[Any]:
        return [sys.modules.get(n) for n in self.names]
