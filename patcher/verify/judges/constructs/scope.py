"""What names mean in one parsed source file, for the rules by construct (patcher/verify/judges/constructs/rules.py):
what is library code, what a name is bound to, which names are data, which methods a class defines.

Flow-insensitive and whole-file, on purpose: a name is *foreign* (library code the diff may not write) when
an import binds it anywhere in the file, when it is a builtin the file never rebinds, or when any assignment,
loop, `with`, walrus or default binds it to a foreign value (`m = sys`, `for m in (os, sys)`); that is the
alias route of monkeypatching. Call results are not foreign (an instance a library returns is the caller's
to configure), except the calls that hand back classes or namespaces (`type(x)`, `vars(x)`, `getattr`).
"""

from __future__ import annotations

import ast
import builtins
import re
from collections.abc import Callable
from dataclasses import dataclass, field

BUILTIN_NAMES = frozenset(dir(builtins))
CLASS_CALLS = frozenset({"type", "vars", "getattr", "globals", "locals", "__import__", "super"})
"""Builtins whose result is a class, a module or a namespace, not a fresh object."""
ATTR_BUILTINS = frozenset({"getattr", "hasattr", "setattr", "delattr"})
_DATA_PREFIX = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_DATA_CALLS = frozenset({"items", "keys", "values", "get", "sorted", "enumerate", "zip", "reversed", "list", "tuple"})


def chain(expr: ast.expr) -> tuple[ast.expr, list[str]]:
    """The root of an attribute/subscript chain and the attribute names on the way (`a.b[0].c` → a, [b, c]);
    `getattr(x, "lit")` reads as `x.lit`."""
    names: list[str] = []
    while True:
        if isinstance(expr, ast.Attribute):
            names.append(expr.attr)
            expr = expr.value
        elif isinstance(expr, ast.Subscript):
            expr = expr.value
        elif (isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "getattr"
              and len(expr.args) >= 2 and isinstance(expr.args[1], ast.Constant)):
            names.append(str(expr.args[1].value))
            expr = expr.args[0]
        else:
            return expr, names[::-1]


@dataclass
class Scope:
    imports: dict[str, str] = field(default_factory=dict)
    """Name → the dotted origin an import binds it to (`from os import path as p` → p: os.path)."""
    bound: set[str] = field(default_factory=set)
    """Every name the file binds by any means (a builtin of that name is then not the builtin)."""
    classes: set[str] = field(default_factory=set)
    foreign: set[str] = field(default_factory=set)

    def origin(self, expr: ast.expr) -> str | None:
        """The dotted name an expression spells through imports (`p.join` → os.path.join), or None."""
        root, names = chain(expr)
        if not isinstance(root, ast.Name):
            return None
        if root.id in self.imports:
            return ".".join([self.imports[root.id], *names])
        if root.id in BUILTIN_NAMES and root.id not in self.bound:
            return ".".join(["builtins", root.id, *names])
        return None

    def is_builtin(self, node: ast.expr, *names: str) -> bool:
        return isinstance(node, ast.Name) and node.id in names and node.id not in self.bound

    def is_foreign(self, expr: ast.expr) -> bool:
        """Whether the expression is (an attribute or item of) library code: a module, a class or function
        of a library, a builtin, or a class reached through `type(…)`/`__class__`."""
        root, names = chain(expr)
        if any(n in ("__class__", "__dict__", "__globals__", "__builtins__", "__base__", "__bases__", "__mro__")
               for n in names):
            return True
        if isinstance(root, ast.Name):
            return root.id in self.foreign or (root.id in BUILTIN_NAMES and root.id not in self.bound)
        if isinstance(root, ast.Call):
            return self.is_builtin(root.func, *CLASS_CALLS) and not self.is_builtin(root.func, "super")
        return False


def scope_of(tree: ast.Module) -> Scope:
    s = Scope()
    pairs: list[tuple[ast.AST, ast.expr]] = []
    for node in ast.walk(tree):
        pairs += _bindings(node)
        if isinstance(node, ast.Import):
            for a in node.names:
                name = a.asname or a.name.split(".")[0]
                s.imports[name] = a.name if a.asname else name
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            for a in node.names:
                s.imports[a.asname or a.name] = f"{base}.{a.name}" if base else a.name
        elif isinstance(node, ast.ClassDef):
            s.classes.add(node.name)
        _bind(node, s.bound)
    s.foreign = set(s.imports)
    for _ in range(4):  # aliases of aliases, a few levels deep
        before = len(s.foreign)
        for target, value in pairs:
            if any(s.is_foreign(v) for v in _values(value)):
                s.foreign |= {t.id if isinstance(t, ast.Name) else t.arg for t in ast.walk(target)
                              if isinstance(t, ast.Name | ast.arg)}
        if len(s.foreign) == before:
            break
    return s


def _bind(node: ast.AST, into: set[str]) -> None:
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
        into.add(node.id)
    elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        into.add(node.name)
    elif isinstance(node, ast.arg):
        into.add(node.arg)
    elif isinstance(node, ast.Import | ast.ImportFrom):
        into |= {(a.asname or a.name).split(".")[0] for a in node.names}


def _bindings(node: ast.AST) -> list[tuple[ast.AST, ast.expr]]:
    """(target, value) pairs a statement or expression binds."""
    if isinstance(node, ast.Assign):
        return [(t, node.value) for t in node.targets]
    if isinstance(node, ast.AnnAssign | ast.AugAssign | ast.NamedExpr) and node.value is not None:
        return [(node.target, node.value)]
    if isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
        return [(node.target, node.iter)]
    if isinstance(node, ast.With | ast.AsyncWith):
        return [(i.optional_vars, i.context_expr) for i in node.items if i.optional_vars is not None]
    if isinstance(node, ast.arguments):
        positional = [*node.posonlyargs, *node.args]
        pairs: list[tuple[ast.AST, ast.expr]] = list(zip(positional[len(positional) - len(node.defaults):],
                                                         node.defaults, strict=True))
        return pairs + [(a, d) for a, d in zip(node.kwonlyargs, node.kw_defaults, strict=True) if d is not None]
    return []


def _values(expr: ast.expr) -> list[ast.expr]:
    """The expression, or the items of a literal container or conditional it builds (a tuple of modules)."""
    if isinstance(expr, ast.Tuple | ast.List | ast.Set):
        return [v for e in expr.elts for v in _values(e)]
    if isinstance(expr, ast.IfExp):
        return _values(expr.body) + _values(expr.orelse)
    if isinstance(expr, ast.BoolOp):
        return [v for e in expr.values for v in _values(e)]
    if isinstance(expr, ast.Starred):
        return _values(expr.value)
    return [expr]


def named_bindings(node: ast.AST) -> list[tuple[ast.AST, ast.expr]]:
    """The (target, value) pairs of an assignment or a loop: a parameter's default and a `with`'s context
    manager are not data a name holds."""
    return [] if isinstance(node, ast.With | ast.AsyncWith | ast.arguments) else _bindings(node)


def computed_families(tree: ast.Module) -> set[str]:
    """The getattr-family builtins the base file calls with a computed name."""
    return {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
            and n.func.id in ATTR_BUILTINS and len(n.args) >= 2 and not _literal(n.args[1])}


def _literal(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def data_name(expr: ast.expr, values_of: Callable[[str], list[ast.expr]], depth: int) -> bool:
    """Whether a computed attribute name is data: it cannot spell a dunder and no call builds it."""
    if depth > 3:
        return False
    if isinstance(expr, ast.Constant):
        return isinstance(expr.value, str) and "__" not in expr.value
    if isinstance(expr, ast.Name):
        return all(_data_value(v, values_of, depth + 1) for v in values_of(expr.id))
    if isinstance(expr, ast.Attribute):
        return not expr.attr.startswith("_") and data_name(expr.value, values_of, depth)
    if isinstance(expr, ast.Subscript):
        return isinstance(expr.slice, ast.Constant | ast.Name) and data_name(expr.value, values_of, depth)
    pieces = _joined(expr)
    if pieces and isinstance(pieces[0], ast.Constant) and _DATA_PREFIX.match(str(pieces[0].value)):
        return all(data_name(p, values_of, depth) for p in pieces[1:])
    return False


def _data_value(expr: ast.expr, values_of: Callable[[str], list[ast.expr]], depth: int) -> bool:
    """A value a data name may be bound to: no dunder text, no bytes or codes to decode, calls only of the
    plain container walks (`kwargs.items()`, `sorted(fields)`), and so on for the names it uses."""
    for node in ast.walk(expr):
        if isinstance(node, ast.Constant) and (isinstance(node.value, bytes) or (
                isinstance(node.value, str) and "__" in node.value)):
            return False
        if isinstance(node, ast.List | ast.Tuple | ast.Set) and any(
                isinstance(e, ast.Constant) and type(e.value) is int for e in node.elts):
            return False
        if isinstance(node, ast.Call):
            f = node.func
            if (f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else "") not in _DATA_CALLS:
                return False
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and not (
                depth < 3 and all(_data_value(v, values_of, depth + 1) for v in values_of(node.id))):
            return False
    return True


def _joined(expr: ast.expr) -> list[ast.expr]:
    """The pieces of `a + b + …` or of an f-string, in order; [] for anything else."""
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
        left = _joined(expr.left) or [expr.left]
        return left + (_joined(expr.right) or [expr.right])
    if isinstance(expr, ast.JoinedStr):
        return [v.value if isinstance(v, ast.FormattedValue) else v for v in expr.values]
    return []


def class_methods(tree: ast.Module) -> dict[str, tuple[ast.ClassDef, dict[str, ast.stmt]]]:
    """Every class by qualified name, with the names its body defines or assigns."""
    out: dict[str, tuple[ast.ClassDef, dict[str, ast.stmt]]] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                qual = prefix + child.name
                out[qual] = (child, _defines(child))
                visit(child, qual + ".")
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                visit(child, prefix + child.name + ".")
            elif not isinstance(child, ast.expr):
                visit(child, prefix)

    visit(tree, "")
    return out


def _defines(cls: ast.ClassDef) -> dict[str, ast.stmt]:
    """The names the class body binds: directly, or under its if/try/with blocks (not inside a method)."""
    names: dict[str, ast.stmt] = {}
    todo: list[ast.stmt] = list(cls.body)
    while todo:
        stmt = todo.pop(0)
        if isinstance(stmt, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            names.setdefault(stmt.name, stmt)
        elif isinstance(stmt, ast.Assign | ast.AnnAssign):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for n in (n for t in targets for n in ast.walk(t)):
                if isinstance(n, ast.Name):
                    names.setdefault(n.id, stmt)
        elif isinstance(stmt, ast.If | ast.Try | ast.With | ast.For | ast.While):
            todo += [c for c in ast.iter_child_nodes(stmt) if isinstance(c, ast.stmt)]
            todo += [c for h in getattr(stmt, "handlers", []) for c in h.body]
    return names
