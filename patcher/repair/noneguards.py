"""Statement-level templates: a missing `None`/empty guard before the failing statement, a missing `return`.

A guard is a new `if x is None:` / `if not x:` block inserted on its own lines before the statement,
indented like it, whose body is `return None` (or `return 0` after a ZeroDivisionError, or `continue`
inside a loop). The subject is a plain name or attribute chain on the failing line, the ones the
message points at first (the object of `.attr`, `[…]`, `len(…)`, an operand, a divisor).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from patcher.repair.edits import Edit, Source
from patcher.repair.site import Fix, Func, Site, innermost
from patcher.verify import is_test_or_config

_NONE = re.compile(r"\bNone(?:Type)?\b")
_EMPTY_VALUE = re.compile(r": (?:''|\"\")$|\(char 0\)$|ConversionSyntax")
"""A conversion of an empty string: `int('')`, `float('')`, `json.loads('')`, `Decimal('')`."""
_CONVERSIONS = {"int", "float", "complex", "Decimal", "Fraction", "loads", "fromisoformat", "strptime",
                "parse", "date", "datetime", "time", "ip_address", "UUID"}
_MAX_SUBJECTS = 4
_MAX_DEFS = 5


def none_guard(site: Site) -> Iterator[Fix]:
    """For a TypeError/AttributeError on a None: `if x is None: return None` before the statement."""
    yield from _guard(site, "none" if _kind(site) == "none" else None)


def empty_guard(site: Site) -> Iterator[Fix]:
    """For a ZeroDivisionError, IndexError, or ValueError on an empty sequence or an empty string given to a
    conversion (`int('')`): `if not x: return None`."""
    yield from _guard(site, "empty" if _kind(site) == "empty" else None)


def _guard(site: Site, kind: str | None) -> Iterator[Fix]:
    stmt, func = site.statement(), site.function()
    if not kind or stmt is None or func is None or isinstance(stmt, Func | ast.ClassDef) or stmt is func:
        return
    src = site.src
    line = src.line(stmt.lineno)
    indent = line[: len(line) - len(line.lstrip())]
    if src.offset(stmt.lineno, stmt.col_offset) != src.starts[stmt.lineno - 1] + len(indent):
        return  # shares its line with a header (`if x: y.z()`): no room for a guard
    bound = {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    loop = innermost(func, stmt.lineno, ast.For | ast.AsyncFor | ast.While)
    # `continue` in a `while` usually skips what moves it on: a loop that never ends, checked to its deadline
    bodies = ["return None", *(["return 0"] if site.exc_type == "ZeroDivisionError" else []),
              *(["continue"] if not isinstance(loop, ast.While) else [])]
    nl, unit = src.newline(), src.indent_unit()
    at = src.starts[stmt.lineno - 1]
    retyped = _never_none(func)
    for subject in _subjects(site, kind, stmt, bound):
        test = f"{subject} is None" if kind == "none" else f"not {subject}"
        for body in bodies:
            text = f"{indent}if {test}:{nl}{indent}{unit}{body}{nl}"
            yield Fix(src, site.line, f"insert `if {test}: {body}` before line {stmt.lineno}",
                      (Edit(at, at, text),), late=retyped and body == "return None")


def _kind(site: Site) -> str | None:
    if site.exc_type in ("TypeError", "AttributeError") and "NoneType" in site.message:
        return "none"
    if site.exc_type in ("ZeroDivisionError", "IndexError") or (
        site.exc_type in ("ValueError", "JSONDecodeError", "InvalidOperation")
        and ("empty" in site.message or _EMPTY_VALUE.search(site.message))
    ):
        return "empty"
    return None


def _subjects(site: Site, kind: str, stmt: ast.stmt, bound: set[str]) -> list[str]:
    msg = site.message
    first: list[ast.expr] = []
    rest: list[ast.expr] = []
    if isinstance(stmt, ast.For | ast.AsyncFor) and stmt.lineno == site.line and "iterable" in msg:
        first.append(stmt.iter)
    held = _held(site)
    for node in site.nodes(ast.expr):
        if kind == "none":
            if (isinstance(node, ast.Attribute) and "has no attribute" in msg) or (
                isinstance(node, ast.Subscript) and "subscriptable" in msg
            ):
                first.append(node.value)
            elif isinstance(node, ast.BinOp) and "operand" in msg:
                first += [node.left, node.right]
            elif isinstance(node, ast.Call) and _called(node) == "len" and "len()" in msg:
                first += node.args
            elif isinstance(node, ast.Call) and "not callable" in msg:
                first.append(node.func)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and id(node) not in held:
                rest.append(node)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div | ast.FloorDiv | ast.Mod):
            divisor = node.right
            first += divisor.args if isinstance(divisor, ast.Call) and _called(divisor) == "len" else [divisor]
        elif isinstance(node, ast.Subscript) and site.exc_type == "IndexError":
            first.append(node.value)
        elif isinstance(node, ast.Call) and _called(node) in ("min", "max", *_CONVERSIONS) and node.args:
            first.append(node.args[0])
    texts = [site.src.segment(n) for n in [*first, *rest] if _plain(n) and _root(n) not in bound]
    return [t for t in dict.fromkeys(texts) if t not in ("None", "True", "False")][:_MAX_SUBJECTS]


_BUILT = (ast.List, ast.Tuple, ast.Set, ast.Dict, ast.ListComp, ast.SetComp, ast.DictComp, ast.JoinedStr)


def _never_none(func: Func) -> bool:
    """Every `return` of the function (none nested in an inner def) gives a value built on the spot: a list,
    tuple, set or dict display, a comprehension, an f-string, a non-None literal, or arithmetic on those.
    A new `return None` there changes what callers get rather than guarding a value that may be absent
    (that is how a swapped argument one frame up gets silenced), so such guards are tried late."""
    returns = [n for n in _own_nodes(func) if isinstance(n, ast.Return)]
    return bool(returns) and all(r.value is not None and _built(r.value) for r in returns)


def _built(expr: ast.expr) -> bool:
    if isinstance(expr, ast.BinOp):
        return _built(expr.left) or _built(expr.right)
    return isinstance(expr, _BUILT) or (isinstance(expr, ast.Constant) and expr.value is not None)


def _own_nodes(func: Func) -> Iterator[ast.AST]:
    stack: list[ast.AST] = list(func.body)
    while stack:
        node = stack.pop()
        yield node
        stack += [c for c in ast.iter_child_nodes(node) if not isinstance(c, Func | ast.Lambda | ast.ClassDef)]


def _held(site: Site) -> set[int]:
    """Nodes that are items of a list, tuple, set or dict display on the line: a None held there raises no
    TypeError, so guarding it silences whatever else was None (in `[default] * n`, the None is `n`)."""
    held: set[int] = set()
    for node in site.nodes(ast.List, ast.Tuple, ast.Set, ast.Dict):
        items = [*node.keys, *node.values] if isinstance(node, ast.Dict) else node.elts
        held |= {id(item) for item in items if item is not None}
    return held


def _called(call: ast.Call) -> str | None:
    if isinstance(call.func, ast.Name):
        return call.func.id
    return call.func.attr if isinstance(call.func, ast.Attribute) else None


def _plain(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) or (isinstance(node, ast.Attribute) and _plain(node.value))


def _root(node: ast.expr) -> str:
    return node.id if isinstance(node, ast.Name) else _root(node.value)  # type: ignore[attr-defined]


def missing_return(site: Site) -> Iterator[Fix]:
    """A function called on the line ends in an expression or assignment whose value it never returns."""
    if not _NONE.search(site.message):
        return
    names = [n for c in site.nodes(ast.Call) if (n := _called(c))]
    for name in dict.fromkeys(names):
        defs = (d for d in site.repo.defs(name, first=site.src) if not is_test_or_config(d[0].path))
        for _, (src, func) in zip(range(_MAX_DEFS), defs, strict=False):
            if fix := _return_last(src, func):
                yield fix


def _return_last(src: Source, func: Func) -> Fix | None:
    last = func.body[-1]
    if last.lineno == func.lineno:
        return None
    if isinstance(last, ast.Expr) and not isinstance(last.value, ast.Constant | ast.Yield | ast.YieldFrom):
        start = src.span(last)[0]
        text = src.segment(last).split("\n")[0]
        return Fix(src, last.lineno, f"`{text}` → `return {text}` in `{func.name}`", (Edit(start, start, "return "),))
    target = None
    if isinstance(last, ast.Assign) and len(last.targets) == 1:
        target = last.targets[0]
    elif isinstance(last, ast.AugAssign | ast.AnnAssign):
        target = last.target
    if not isinstance(target, ast.Name) or last.end_lineno is None:
        return None
    line = src.line(last.lineno)
    indent = line[: len(line) - len(line.lstrip())]
    end_line = src.line(last.end_lineno)
    at = src.starts[last.end_lineno - 1] + len(end_line)
    lead = "" if end_line.endswith("\n") else src.newline()
    text = f"{lead}{indent}return {target.id}{src.newline() if not lead else ''}"
    return Fix(src, last.lineno, f"add `return {target.id}` at the end of `{func.name}`", (Edit(at, at, text),))
