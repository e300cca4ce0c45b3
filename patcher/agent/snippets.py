"""Numbered source excerpts for the agent's task text: the function around the crash site, a few lines
around each suspect, all within a character budget, so a model with little context sees the suspect
code without rounds of read_file. Files are read from the staging copy, never through a symlink."""

from __future__ import annotations

import ast
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

MAX_FUNCTION_LINES = 40
"""The crash site's whole enclosing function is shown when it is at most this long; else lines around it."""


def read_lines(repo: Path, rel: str) -> list[str] | None:
    path = repo / rel
    try:
        if not rel or path.is_symlink() or not os.path.realpath(path).startswith(os.path.realpath(repo) + os.sep):
            return None
        return path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None


def numbered(lines: list[str], lo: int, hi: int, marks: set[int]) -> str:
    """Lines lo..hi (1-based, inclusive) as `>  12  code`, the marked ones with `>`."""
    hi = min(hi, len(lines))
    return "\n".join(f"{'>' if n in marks else ' '}{n:>5}  {lines[n - 1]}" for n in range(max(1, lo), hi + 1))


@cache
def _functions(source: str) -> tuple[tuple[int, int], ...]:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ()
    return tuple((n.lineno, n.end_lineno or n.lineno) for n in ast.walk(tree)
                 if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef))


def enclosing_function(lines: list[str], line: int) -> tuple[int, int] | None:
    """The span of the innermost function holding `line`, from its `def` (decorators aside) to its end."""
    spans = [s for s in _functions("\n".join(lines)) if s[0] <= line <= s[1]]
    return min(spans, key=lambda s: s[1] - s[0]) if spans else None


@dataclass
class Excerpts:
    """Excerpts taken under one budget; a line already shown is not shown again."""

    repo: Path
    budget_chars: int
    redact: Callable[[str], str] = lambda s: s
    shown: dict[str, set[int]] = field(default_factory=dict)

    def around(self, rel: str, line: int, radius: int, whole_function: bool = False) -> str | None:
        """Lines around `line` (or its whole function, when short), numbered; None when the file cannot be
        read, the line was shown already, or the excerpt does not fit the remaining budget."""
        lines = read_lines(self.repo, rel)
        if lines is None or not 1 <= line <= len(lines) or line in self.shown.get(rel, set()):
            return None
        lo, hi = line - radius, line + radius
        span = enclosing_function(lines, line) if whole_function else None
        if span and span[1] - span[0] < MAX_FUNCTION_LINES:
            lo, hi = span
        lo, hi = max(1, lo), min(len(lines), hi)
        text = self.redact(numbered(lines, lo, hi, {line}))
        if len(text) > self.budget_chars:
            return None
        self.budget_chars -= len(text)
        self.shown.setdefault(rel, set()).update(range(lo, hi + 1))
        return text

    def line(self, rel: str, line: int) -> str:
        """One line's code, stripped (for a heading), redacted; empty when it cannot be read."""
        lines = read_lines(self.repo, rel)
        return self.redact(lines[line - 1].strip()) if lines and 1 <= line <= len(lines) else ""
