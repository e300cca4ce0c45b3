"""What a template sees: one line of one parsed repo file, the exception, and the repo to look things up in.

Files are read only from inside the repo directory: no path component may be a symlink, only regular
files under a size cap, UTF-8 that parses. Nothing here writes.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from types import UnionType

from patcher.intake import ExceptionInfo, read_repo_text
from patcher.repair.edits import Edit, Source
from patcher.verify import is_test_or_config

MAX_FILE_BYTES = 1_000_000
MAX_FILES = 50_000
_PRUNE = {".git", "__pycache__", ".venv", "venv", "node_modules", ".tox", ".mypy_cache", ".pytest_cache"}
Func = ast.FunctionDef | ast.AsyncFunctionDef


class RepoView:
    def __init__(self, root: Path) -> None:
        self.root = root
        self._sources: dict[str, Source | None] = {}
        self._texts: dict[str, str | None] = {}

    @cached_property
    def files(self) -> list[str]:
        """Regular files (no symlinks, not under a symlinked directory), relative POSIX paths, sorted."""
        out: list[str] = []
        for top, dirs, names in os.walk(self.root):
            dirs[:] = sorted(d for d in dirs if d not in _PRUNE and not os.path.islink(os.path.join(top, d)))
            rel = os.path.relpath(top, self.root)
            for name in sorted(names):
                if not os.path.islink(os.path.join(top, name)) and len(out) < MAX_FILES:
                    out.append(name if rel == "." else f"{rel}/{name}".replace(os.sep, "/"))
        return sorted(out)

    @cached_property
    def python_files(self) -> list[str]:
        return [f for f in self.files if f.endswith(".py") and not is_test_or_config(f)]

    def source(self, rel: str) -> Source | None:
        if rel not in self._sources:
            text = self.text(rel)
            self._sources[rel] = Source.parse(rel, text) if text is not None else None
        return self._sources[rel]

    def text(self, rel: str) -> str | None:
        """The file's text if it is a regular UTF-8 file under the size cap reached through no symlink."""
        if rel not in self._texts:
            self._texts[rel] = read_repo_text(self.root, rel, MAX_FILE_BYTES)
        return self._texts[rel]

    def defs(self, name: str, first: Source | None = None) -> Iterator[tuple[Source, Func]]:
        """Functions and methods called `name`: in `first` (the frame's own file), then other repo modules."""
        pattern = re.compile(rf"\bdef\s+{re.escape(name)}\b")
        seen = {first.path} if first else set()
        sources = [first] if first else []
        sources += (s for f in self.python_files if f not in seen and (s := self._if_matches(f, pattern)))
        for src in sources:
            for node in ast.walk(src.tree):
                if isinstance(node, Func) and node.name == name:
                    yield src, node

    def classes(self, name: str) -> Iterator[ast.ClassDef]:
        pattern = re.compile(rf"\bclass\s+{re.escape(name)}\b")
        for f in self.python_files:
            if src := self._if_matches(f, pattern):
                yield from (n for n in ast.walk(src.tree) if isinstance(n, ast.ClassDef) and n.name == name)

    def module(self, dotted: str) -> Source | None:
        tail = dotted.replace(".", "/")
        for f in self.python_files:
            if f"/{f}".endswith((f"/{tail}.py", f"/{tail}/__init__.py")):
                return self.source(f)
        return None

    def _if_matches(self, rel: str, pattern: re.Pattern[str]) -> Source | None:
        text = self.text(rel)
        return self.source(rel) if text and pattern.search(text) else None


@dataclass(frozen=True)
class Fix:
    src: Source
    line: int
    description: str
    edits: tuple[Edit, ...]
    late: bool = False
    """Tried after the fixes on the lines that raised and fed the raise (see Candidate.last)."""


@dataclass
class Site:
    src: Source
    line: int
    exc: ExceptionInfo | None
    repo: RepoView

    @property
    def exc_type(self) -> str:
        return (self.exc.type if self.exc else "").rsplit(".", 1)[-1]

    @property
    def message(self) -> str:
        return self.exc.message if self.exc else ""

    def nodes(self, *types: type) -> list:  # type: ignore[type-arg]
        return [n for n in self.src.by_line.get(self.line, []) if isinstance(n, types)]

    def fix(self, description: str, *edits: Edit) -> Fix:
        return Fix(self.src, self.line, description, edits)

    def function(self) -> Func | None:
        """The innermost function whose body holds this line."""
        return innermost(self.src.tree, self.line, Func)  # type: ignore[return-value]

    def statement(self) -> ast.stmt | None:
        """The innermost statement holding this line (a compound statement when the line is its header)."""
        return innermost(self.src.tree, self.line, ast.stmt)  # type: ignore[return-value]


def innermost(tree: ast.AST, line: int, kind: type | UnionType) -> ast.AST | None:
    """The deepest node of `kind` whose lines (decorators included) hold `line`."""
    found, node = None, tree
    while True:
        inner = next((c for c in ast.iter_child_nodes(node) if _holds(c, line)), None)
        if inner is None:
            return found
        found = inner if isinstance(inner, kind) else found
        node = inner


def _holds(node: ast.AST, line: int) -> bool:
    start = getattr(node, "lineno", None)
    if start is None:  # operators, `arguments`, `comprehension`, `match_case`: look inside
        return any(_holds(c, line) for c in ast.iter_child_nodes(node))
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.decorator_list:
        start = node.decorator_list[0].lineno
    return start <= line <= (getattr(node, "end_lineno", None) or start)
