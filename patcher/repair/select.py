"""Which of the suite's tests a candidate's check runs: those whose coverage reaches the edited function.

A candidate edits one function's body (or adds a guard inside it). A test that ran no line of that
function in the coverage run (patcher/repair/localize.py) cannot run the edited code either, so the
candidate's suite check runs only the tests that did, plus every test that failed on the base (whether
they now pass is what ranks survivors). A candidate outside any function (module level: it runs at
import, which coverage does not see), a coverage run that missed some of the suite's tests, or a
selection too long for one command, runs the whole suite. This screens candidates only: the chosen
diff's verification runs the whole suite from scratch.
"""

from __future__ import annotations

import ast
from pathlib import Path

from patcher.repair.site import Func, innermost
from patcher.verify import narrowed

MAX_SELECTED = 2000


class Selection:
    def __init__(self, runs: list[dict[str, object]], every: set[str], broken: set[str]) -> None:
        self.lines: dict[str, dict[str, set[int]]] = {}
        for run in runs:
            lines = run.get("lines")
            if isinstance(run.get("id"), str) and isinstance(lines, dict):
                self.lines[str(run["id"])] = {p: set(n) for p, n in lines.items() if isinstance(n, list)}
        self.complete = bool(self.lines) and every <= set(self.lines)
        self.broken = broken
        self._trees: dict[str, ast.Module | None] = {}

    def tests(self, repo: Path, path: str, line: int) -> set[str] | None:
        """The tests to run for a candidate editing `path` at `line`; None for the whole suite."""
        if not self.complete:
            return None
        func = innermost(tree, line, Func) if (tree := self._tree(repo, path)) else None
        if func is None:
            return None
        lo, hi = func.lineno, func.end_lineno or func.lineno  # type: ignore[attr-defined]
        reach = {t for t, files in self.lines.items() if any(lo <= n <= hi for n in files.get(path, ()))}
        return reach | self.broken

    def command(self, suite: str, repo: Path, path: str, line: int) -> tuple[str, set[str] | None]:
        """The suite command for the candidate and the tests it runs (None: all of them)."""
        chosen = self.tests(repo, path, line)
        if chosen is None:
            return suite, None
        command = narrowed(suite, chosen, MAX_SELECTED)
        return (command, chosen) if command else (suite, None)

    def _tree(self, repo: Path, path: str) -> ast.Module | None:
        if path not in self._trees:
            try:
                self._trees[path] = ast.parse((repo / path).read_text(encoding="utf-8"))
            except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
                self._trees[path] = None
        return self._trees[path]
