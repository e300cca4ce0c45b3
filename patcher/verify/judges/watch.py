"""What the judges' run watches (judges/asked.py): the diff's own lines and the test modules no fix reads (the
runtime judge), and the comparisons a passing run of a test must have made (the keeper's check,
sandbox/judge/accept.py).
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from patcher.verify.policy.treediff import Change

CALLED = ("isclose",)
"""Calls the judge's compiled test module records as comparisons (sandbox/judge/values.py: `math.isclose`)."""


def observe_spec(changes: list[Change], tests: list[str], base: Path | None) -> dict[str, Any]:
    """What the observer watches: the diff's added lines (with `base`: every line of the base's version of the
    files the diff changes), and the test modules whose source no fix reads (`tests`: the modules of the tests
    the judge runs and those the suite ran; conftest files are always such; a data file a test hands the code
    is not)."""
    lines: dict[str, list[int]] = {}
    for c in changes:
        if not c.path.endswith(".py") or c.kind == "deleted":
            continue
        if base is None:
            lines[c.path] = [n for n, _ in c.added_lines]
        elif c.kind != "added" and c.old_text is not None:
            lines[c.path] = list(range(1, c.old_text.count("\n") + 2))
    return {"lines": lines, "tests": sorted({t for t in tests if t.endswith(".py")})}


def required(text: str, node: str) -> list[int]:
    """The lines of the comparisons a passing run of the test must have made: the asserts of one comparison (or of
    one `isclose` call) at the top of the test function, before its first compound statement (an undecorated
    function, or one with marks only; a unittest method's asserts are calls, not required)."""
    names = node.split("::")[1:]
    if not names:
        return []
    try:
        scope: list[ast.stmt] = ast.parse(text).body
    except (SyntaxError, ValueError):
        return []
    func: ast.AST | None = None
    for name in [*names[:-1], names[-1].split("[")[0]]:  # the last definition of a name is the one that runs
        func = next((s for s in reversed(scope) if isinstance(s, ast.FunctionDef | ast.ClassDef) and s.name == name),
                    None)
        if func is None:
            return []
        scope = func.body
    if not isinstance(func, ast.FunctionDef) or not all(_is_mark(d) for d in func.decorator_list):
        return []
    out = []
    for stmt in func.body:
        if isinstance(stmt, ast.Assert):
            test = stmt.test
            compared = isinstance(test, ast.Compare) and len(test.ops) == 1 and not isinstance(test.ops[0],
                                                                                               ast.Is | ast.IsNot)
            if compared or (isinstance(test, ast.Call) and _called(test.func) in CALLED):
                out.append(test.lineno)
        elif not isinstance(stmt, ast.Expr | ast.Assign | ast.AnnAssign | ast.AugAssign | ast.Pass):
            break
    return out


def _called(func: ast.expr) -> str:
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def _is_mark(node: ast.expr) -> bool:
    text = ast.unparse(node)
    return text.startswith(("pytest.mark.", "mark."))
