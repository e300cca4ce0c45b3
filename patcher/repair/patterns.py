"""More one-statement fix patterns (TBar's families, as small AST span edits on one line).

Swapped operands of a comparison or a non-commutative operator; every other relational operator; an
`except` widened with the traceback's exception type; a neighbouring constant (0/1, ""/None,
True/False); a name replaced by another local of the function; a string key replaced by another key
the file uses.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Iterator

from patcher.repair.edits import Edit
from patcher.repair.names import local_names
from patcher.repair.site import Fix, Site

_REL = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}
_NON_COMMUTATIVE = ast.Sub | ast.Div | ast.FloorDiv | ast.Mod | ast.Pow | ast.LShift | ast.RShift
_ATOMS = ast.Name | ast.Attribute | ast.Call | ast.Subscript | ast.Constant
_NEIGHBOURS = {"0": ("1",), "1": ("0",), "''": ("None",), "True": ("False",), "False": ("True",),
               "None": ('""', "0")}
"""By `repr` of the value (True == 1 as a dict key)."""
_MAX_NAMES = 6


def swap_operands(site: Site) -> Iterator[Fix]:
    """`a - b` → `b - a` (also `/`, `//`, `%`, `**`, shifts) and `a < b` → `b < a`."""
    for node in site.nodes(ast.BinOp, ast.Compare):
        if isinstance(node, ast.BinOp) and isinstance(node.op, _NON_COMMUTATIVE):
            left, right = node.left, node.right
        elif isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _REL:
            left, right = node.left, node.comparators[0]
        else:
            continue
        a, b = _operand(site, left), _operand(site, right)
        if a != b:
            yield site.fix(f"swap the operands `{a}` and `{b}`", Edit(*site.src.span(left), b),
                           Edit(*site.src.span(right), a))


def _operand(site: Site, node: ast.expr) -> str:
    """The operand's text, parenthesized when moving it could change how it binds."""
    text = site.src.segment(node)
    return text if isinstance(node, _ATOMS) else f"({text})"


def relational(site: Site) -> Iterator[Fix]:
    """Each of `<`, `<=`, `>`, `>=`, `==`, `!=` in place of the one on the line."""
    for node in site.nodes(ast.Compare):
        operands = [node.left, *node.comparators]
        for i, op in enumerate(node.ops):
            if type(op) not in _REL:
                continue
            toks = site.src.tokens_between(site.src.span(operands[i])[1], site.src.span(operands[i + 1])[0])
            if len(toks) != 1:
                continue
            for new in _REL.values():
                if new != toks[0].string:
                    yield site.fix(f"`{toks[0].string}` → `{new}`", Edit(toks[0].start, toks[0].end, new))


def widen_except(site: Site) -> Iterator[Fix]:
    """The traceback's exception type added to the handlers of a `try` whose body holds the line."""
    exc = site.exc_type
    if not exc or not _in_scope(site, exc):
        return
    for node in site.src.walk(ast.Try):
        if not any(_spans(s, site.line) for s in node.body):
            continue
        for handler in node.handlers:
            if handler.type is None:
                continue
            names = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
            if any(site.src.segment(n) == exc for n in names):
                continue
            start, end = site.src.span(handler.type)
            inner = ", ".join(site.src.segment(n) for n in names)
            desc = f"`except {site.src.segment(handler.type)}` → `except ({inner}, {exc})`"
            yield site.fix(desc, Edit(start, end, f"({inner}, {exc})"))


def _spans(stmt: ast.stmt, line: int) -> bool:
    return stmt.lineno <= line <= (stmt.end_lineno or stmt.lineno)


def _in_scope(site: Site, name: str) -> bool:
    if isinstance(getattr(builtins, name, None), type):
        return True
    return (any(node.name == name for node in site.src.walk(ast.ClassDef))
            or any((node.asname or node.name.rsplit(".", 1)[-1]) == name for node in site.src.walk(ast.alias)))


def constant(site: Site) -> Iterator[Fix]:
    """0↔1, `""`→`None`, `None`→`""`/`0`, `True`↔`False`."""
    for node in site.nodes(ast.Constant):
        old = site.src.segment(node)
        for new in _NEIGHBOURS.get(repr(node.value), ()):
            yield site.fix(f"`{old}` → `{new}`", Edit(*site.src.span(node), new))


def other_name(site: Site) -> Iterator[Fix]:
    """A local name read on the line replaced by another local of the function; a string key by another
    string key the file uses (a wrong variable or dictionary key that raised nothing)."""
    func = site.function()
    pool = sorted(local_names(func)) if func else []
    for node in site.nodes(ast.Name):
        if isinstance(node.ctx, ast.Load) and node.id in pool:
            other = _other_operand(site, node)
            for new in [p for p in pool if p not in (node.id, "self", other)][:_MAX_NAMES]:
                yield site.fix(f"`{node.id}` → `{new}`", Edit(*site.src.span(node), new))
    keys = sorted({n.slice.value for n in site.src.walk(ast.Subscript)
                   if isinstance(n.slice, ast.Constant) and isinstance(n.slice.value, str)})
    for sub in site.nodes(ast.Subscript):
        if isinstance(sub.slice, ast.Constant) and isinstance(sub.slice.value, str):
            for new in [k for k in keys if k != sub.slice.value][:_MAX_NAMES]:
                yield site.fix(f"key `{sub.slice.value!r}` → `{new!r}`", Edit(*site.src.span(sub.slice), repr(new)))


def _other_operand(site: Site, node: ast.Name) -> str | None:
    """The name on the other side of `node`'s operator: `a - a` or `a == a` is never the intended code."""
    for parent in site.nodes(ast.BinOp, ast.Compare):
        pair = (parent.left, parent.right) if isinstance(parent, ast.BinOp) else (parent.left, *parent.comparators)
        if node in pair and len(pair) == 2:
            other = pair[1] if pair[0] is node else pair[0]
            return other.id if isinstance(other, ast.Name) else None
    return None
