"""Imported at start-up by every Python the tool server runs (this directory is its PYTHONPATH).

Tests run in safe-path mode (PYTHONSAFEPATH=1), so the repository is not put ahead of site-packages and a
repo `pytest.py` or `unittest.py` cannot stand in for the runner. Flat and src layouts still import
from the repository: its root (and `src/`) go at the *end* of sys.path, after the installed packages.

One exception: the repository's own `test` or `tests` package (or module) is found first. The standard
library has a `test` package of its own (its regression tests; no runner imports it), and some distributions
install a stray top-level `tests`: behind them, `import test.test_utils` found the wrong `test` and failed
("No module named 'test.test_utils'"), where the project's own test run finds its own.

Python before 3.11 has no safe-path mode: it puts the working directory (the repo) first on sys.path after
this module has run. There a finder ahead of the others looks modules up without that one entry (the very
object Python put there: a path pytest inserts later, even the same one, counts as in 3.11).
"""

import os
import sys
from importlib.machinery import PathFinder

OWN_NAMES = ("test", "tests")
"""Top-level names the repository's own package wins, wherever else they are installed."""


def _roots() -> list:
    root = os.environ.get("PATCHER_REPO_ROOT")
    return [p for p in (root, os.path.join(root, "src")) if os.path.isdir(p)] if root else []


def _append_repo() -> None:
    for path in _roots():
        if path not in sys.path:
            sys.path.append(path)


class _OwnTests:
    """The repository's `test`/`tests` package (a regular one, or a module) ahead of every other."""

    @staticmethod
    def find_spec(name, path=None, target=None):  # type: ignore[no-untyped-def]
        if path is not None or name not in OWN_NAMES:
            return None
        spec = PathFinder.find_spec(name, _roots(), target)
        return spec if spec is not None and spec.loader is not None else None  # a namespace portion does not win


_BEFORE = {id(p) for p in sys.path}
_ADDED: list = []


class _SafePath:
    """Top-level imports as safe-path mode would find them: without the sys.path[0] Python added at start."""

    @staticmethod
    def find_spec(name, path=None, target=None):  # type: ignore[no-untyped-def]
        if path is not None:
            return None
        if not _ADDED and sys.path and id(sys.path[0]) not in _BEFORE:
            _ADDED.append(sys.path[0])  # Python's entry: the first new one at the front
        return PathFinder.find_spec(name, [p for p in sys.path if not any(p is a for a in _ADDED)], target)


_append_repo()
if os.environ.get("PYTHONSAFEPATH") and not getattr(sys.flags, "safe_path", False):
    sys.meta_path.insert(0, _SafePath)  # type: ignore[arg-type]
sys.meta_path.insert(0, _OwnTests)  # type: ignore[arg-type]
