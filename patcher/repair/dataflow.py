"""Where the values a line reads were computed: the statements a few lines back that assign them.

A crash shows where a bad value was used, not where it was made: `key = (b, a)` two lines before
`return table[key]` is the line to change when `table[key]` raises. From the statement at the crash
line, each name it reads is traced back to its latest assignment earlier in the same function (at most
WINDOW statements back, and through at most DEPTH assignments), by the AST alone. Straight-line code
only: an assignment inside a branch or loop before the line counts as a possible source all the same.
"""

from __future__ import annotations

import ast
from collections.abc import Collection

from patcher.repair.edits import Source
from patcher.repair.site import Func, innermost

WINDOW = 8
"""Statements before the line that are looked at."""
DEPTH = 2
"""Assignments followed back from the line (its sources, then theirs)."""


def feeding_lines(src: Source, line: int, first: Collection[str] = ()) -> list[int]:
    """Lines whose statements assign values the statement at `line` reads: its own sources (the latest
    assignment of each name it reads, in the order it reads them, the names in `first` before the others),
    then theirs."""
    func = innermost(src.tree, line, Func)
    stmt = innermost(src.tree, line, ast.stmt)
    if func is None or not isinstance(stmt, ast.stmt) or stmt is func:
        return []
    before = sorted((s for s in ast.walk(func) if isinstance(s, ast.stmt) and s is not func
                     and (s.end_lineno or s.lineno) < stmt.lineno), key=lambda s: s.lineno)[-WINDOW:]
    found: list[int] = []
    reads = _reads(stmt)
    todo: list[tuple[list[str], int]] = [([n for n in reads if n in first] + [n for n in reads if n not in first], 0)]
    seen: set[int] = set()
    while todo:
        names, depth = todo.pop(0)
        for name in names:
            source = next((s for s in reversed(before) if name in _writes(s)), None)
            if source is None or source.lineno in seen:
                continue
            seen.add(source.lineno)
            found.append(source.lineno)
            if depth + 1 < DEPTH:
                todo.append((_reads(source), depth + 1))
    return found


def _reads(stmt: ast.stmt) -> list[str]:
    """Names read by the statement (by its header alone when it is compound), in source order."""
    parts: list[ast.AST] = [stmt]
    if isinstance(stmt, ast.If | ast.While):
        parts = [stmt.test]
    elif isinstance(stmt, ast.For | ast.AsyncFor):
        parts = [stmt.iter]
    elif isinstance(stmt, ast.With | ast.AsyncWith):
        parts = [i.context_expr for i in stmt.items]
    elif isinstance(stmt, ast.Try | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return []
    names = [n for p in parts for n in ast.walk(p) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]
    return list(dict.fromkeys(n.id for n in sorted(names, key=lambda n: (n.lineno, n.col_offset))))


def _writes(stmt: ast.stmt) -> set[str]:
    """Names a simple statement assigns (compound statements' bodies are statements of their own)."""
    if isinstance(stmt, ast.Assign):
        targets: list[ast.expr] = list(stmt.targets)
    elif isinstance(stmt, ast.AugAssign | ast.AnnAssign | ast.For | ast.AsyncFor):
        targets = [stmt.target]
    elif isinstance(stmt, ast.With | ast.AsyncWith):
        targets = [i.optional_vars for i in stmt.items if i.optional_vars is not None]
    else:
        return set()
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
