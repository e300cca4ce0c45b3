"""Single-token fix templates on one line: off-by-one, operator swaps, swapped arguments, `d[k]` → `d.get(k)`, a
stray trailing comma.

Each template takes a `Site` and yields `Fix`es in source order. Operators carry no position in the ast,
so their tokens are found with tokenize between the end of one operand and the start of the next.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from patcher.repair.edits import Edit
from patcher.repair.site import Fix, Site

_COMPARE = {
    ast.Lt: ("<", "<="), ast.LtE: ("<=", "<"), ast.Gt: (">", ">="), ast.GtE: (">=", ">"),
    ast.Eq: ("==", "!="), ast.NotEq: ("!=", "=="), ast.Is: ("is", "is not"), ast.IsNot: ("is not", "is"),
    ast.In: ("in", "not in"), ast.NotIn: ("not in", "in"),
}
_ARITH: dict[type, tuple[str, ...]] = {
    ast.Add: ("-",), ast.Sub: ("+",), ast.Mult: ("/",), ast.Div: ("//", "*"), ast.FloorDiv: ("/",),
}
_ATOMIC = (ast.Name, ast.Attribute, ast.Call, ast.Subscript)
_MAX_SWAP_ARGS = 4
_BOUNDING = ("range", "min", "max", "islice", "slice")


def off_by_one(site: Site) -> Iterator[Fix]:
    """±1 on the bounds of indices, slices, `range(…)`, `islice(…)`, `slice(…)`, `min`/`max` of bounds,
    compared constants, and on any `len(…)` or `x ± constant` on the line."""
    bounds: dict[int, ast.expr] = {}
    for node in site.nodes(ast.Subscript, ast.Call, ast.Compare, ast.BinOp):
        if isinstance(node, ast.Subscript):
            sl = node.slice
            found = [b for b in (sl.lower, sl.upper) if b] if isinstance(sl, ast.Slice) else [sl]
        elif isinstance(node, ast.Call):
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
            found = [a for a in node.args if not isinstance(a, ast.Starred)] if name in _BOUNDING else []
            found = found[1:] if name == "islice" else found  # islice(it, stop) / (it, start, stop[, step])
            found += [node] if _is_len(node) else []
        elif isinstance(node, ast.Compare):
            found = [b for b in (node.left, *node.comparators)
                     if int_literal(b) is not None or _is_len(b) or _shifted(b)]
        else:
            found = [node] if _shifted(node) else []
        bounds.update((id(b), b) for b in found if not isinstance(b, ast.Tuple | ast.Slice))
    ordered = sorted(bounds.values(), key=lambda n: (n.lineno, n.col_offset, -(n.end_col_offset or 0)))
    for bound in ordered:
        yield from _plus_minus(site, bound)


def _plus_minus(site: Site, node: ast.expr) -> Iterator[Fix]:
    src = site.src
    start, end = src.span(node)
    old = src.text[start:end]
    if (value := int_literal(node)) is not None:
        for new in (value - 1, value + 1):
            yield site.fix(f"`{old}` → `{new}`", Edit(start, end, str(new)))
    elif isinstance(node, ast.BinOp) and _shifted(node):
        c_start, c_end = src.span(node.right)
        c = int_literal(node.right)
        assert c is not None
        for new in (c - 1, c + 1):
            if new == 0:
                left = src.text[start : src.span(node.left)[1]]
                yield site.fix(f"`{old}` → `{left}`", Edit(src.span(node.left)[1], end, ""))
            elif new > 0:
                text = f"{src.text[start:c_start]}{new}{src.text[c_end:end]}"
                yield site.fix(f"`{old}` → `{text}`", Edit(c_start, c_end, str(new)))
    elif isinstance(node, _ATOMIC):
        for op in ("-", "+"):
            yield site.fix(f"`{old}` → `{old} {op} 1`", Edit(end, end, f" {op} 1"))


def int_literal(node: ast.expr) -> int | None:
    """The value of an int literal, negative ones included; None for anything else."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and (v := int_literal(node.operand)) is not None:
        return -v
    return None


def _shifted(node: ast.expr) -> bool:
    return (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub)
            and int_literal(node.right) is not None)


def _is_len(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len"


def comparison(site: Site) -> Iterator[Fix]:
    """`<`↔`<=`, `>`↔`>=`, `==`↔`!=`, `is`↔`is not`, `in`↔`not in`."""
    for node in site.nodes(ast.Compare):
        operands = [node.left, *node.comparators]
        for i, op in enumerate(node.ops):
            old, new = _COMPARE[type(op)]
            yield from _replace_operator(site, operands[i], operands[i + 1], old, new)


def operator_swap(site: Site) -> Iterator[Fix]:
    """`+`↔`-`, `*`→`/`, `/`→`//` or `*`, `//`→`/` (also augmented), and `and`↔`or`."""
    for node in site.nodes(ast.BinOp, ast.AugAssign, ast.BoolOp):
        if isinstance(node, ast.BinOp):
            for new in _ARITH.get(type(node.op), ()):
                yield from _replace_operator(site, node.left, node.right, None, new)
        elif isinstance(node, ast.AugAssign):
            for new in _ARITH.get(type(node.op), ()):
                yield from _replace_operator(site, node.target, node.value, None, new + "=")
        else:
            old, new = ("and", "or") if isinstance(node.op, ast.And) else ("or", "and")
            edits = []
            for left, right in zip(node.values, node.values[1:], strict=False):
                toks = [t for t in site.src.tokens_between(site.src.span(left)[1], site.src.span(right)[0])]
                if [t.string for t in toks] != [old]:
                    break
                edits.append(Edit(toks[0].start, toks[0].end, new))
            else:
                yield site.fix(f"`{old}` → `{new}`", *edits)


def _replace_operator(site: Site, left: ast.AST, right: ast.AST, old: str | None, new: str) -> Iterator[Fix]:
    toks = site.src.tokens_between(site.src.span(left)[1], site.src.span(right)[0])
    found = " ".join(t.string for t in toks)
    if toks and (old is None or found == old) and found != new:
        yield site.fix(f"`{found}` → `{new}`", Edit(toks[0].start, toks[-1].end, new))


def swap_args(site: Site) -> Iterator[Fix]:
    """Two positional arguments of a call exchanged."""
    for call in site.nodes(ast.Call):
        args = call.args[:_MAX_SWAP_ARGS]
        if len(args) < 2 or any(isinstance(a, ast.Starred) for a in call.args):
            continue
        name = site.src.segment(call.func)
        for i, a in enumerate(args):
            for j in range(i + 1, len(args)):
                b = args[j]
                ta, tb = site.src.segment(a), site.src.segment(b)
                if ta != tb:
                    (sa, ea), (sb, eb) = site.src.span(a), site.src.span(b)
                    desc = f"swap arguments {i + 1} and {j + 1} of `{name}(…)`"
                    yield site.fix(desc, Edit(sa, ea, tb), Edit(sb, eb, ta))


def dict_get(site: Site) -> Iterator[Fix]:
    """For a KeyError: `d[k]` → `d.get(k)`, and `d.get(k, 0)` where the value feeds arithmetic."""
    if site.exc_type != "KeyError":
        return
    arithmetic = {id(n.left) for n in site.nodes(ast.BinOp)} | {id(n.right) for n in site.nodes(ast.BinOp)}
    for sub in site.nodes(ast.Subscript):
        if not isinstance(sub.ctx, ast.Load) or isinstance(sub.slice, ast.Slice):
            continue
        key = site.src.segment(sub.slice)
        if isinstance(sub.slice, ast.Tuple) and not key.startswith("("):
            key = f"({key})"
        value_end, end = site.src.span(sub.value)[1], site.src.span(sub)[1]
        obj = site.src.segment(sub.value)
        defaults = ["", ", 0"] if id(sub) in arithmetic else [""]
        for default in defaults:
            new = f".get({key}{default})"
            yield site.fix(f"`{obj}[{key}]` → `{obj}{new}`", Edit(value_end, end, new))


def stray_comma(site: Site) -> Iterator[Fix]:
    """For an error that names a tuple (`'tuple' object is not callable`, `… has no attribute …`, an operand of
    type 'tuple'): the trailing comma that made a 1-tuple of a value assigned or returned (`handler = make(x),`)
    dropped, on the line; and, when the line calls what is not callable, wherever in the file the called name is
    assigned such a 1-tuple (pyflakes 2.1's class attribute `_ast_node_scope[ast.AsyncFunctionDef] =
    FunctionScope,`, called as `Checker._ast_node_scope[type(tree)]()`). A parenthesized `(x,)` is meant."""
    if "tuple" not in site.message:
        return
    yield from _one_tuples(site, site.nodes(ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Return), site.line)
    if "not callable" in site.message:
        called = {_name_of(call.func) for call in site.nodes(ast.Call)} - {None}
        assigned = [node for node in ast.walk(site.src.tree) if isinstance(node, ast.Assign)
                    and node.lineno != site.line and {_name_of(t) for t in node.targets} & called]
        for node in assigned:
            yield from _one_tuples(site, [node], node.lineno)


def _one_tuples(site: Site, nodes: list[ast.stmt], line: int) -> Iterator[Fix]:
    for node in nodes:
        value = getattr(node, "value", None)
        if not isinstance(value, ast.Tuple) or len(value.elts) != 1 or isinstance(value.elts[0], ast.Starred):
            continue
        start, end = site.src.span(value)
        if site.src.text[start:end].startswith("("):
            continue
        comma = site.src.tokens_between(site.src.span(value.elts[0])[1], end)
        if [t.string for t in comma] == [","]:
            yield Fix(site.src, line, f"drop the trailing comma that makes `{site.src.text[start:end]}` a 1-tuple",
                      (Edit(comma[0].start, comma[0].end, ""),))


def _name_of(node: ast.expr) -> str | None:
    """The name a callee or an assignment target is known by: `h`, `self.h`, `table[k]`'s table's."""
    while isinstance(node, ast.Subscript):
        node = node.value
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
