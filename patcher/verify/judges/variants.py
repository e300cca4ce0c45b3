"""Perturbed reproductions: does the fix hold beyond the tested input?

From the syntax tree of a reproduction test, variants that change one literal input each: a string, a
number, or an item of a literal container, a few per literal, bounded in number. Literals the test
compares a result with (`assert f(x) == 3`: the 3), exception matchers and messages are not inputs and stay.
Each variant is the whole test module with one literal respelled in place, so line numbers and the
module's path stay as they were. Which variants count (they crash the base the same way) is verify/judges/second.py's.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from patcher.verify.judges.constructs.folding import constant_values
from patcher.verify.policy.treediff import Change

PER_TEST = 10
TOTAL = 24


@dataclass(frozen=True)
class Variant:
    test: str
    """The pytest node id of the test the variant changes."""
    source: str
    """The test module's text with the one change."""
    quote: str
    """What changed, for people: `tests/test_x.py:7: 'abc' -> 'abcx'`."""
    inputs: tuple[object, ...] = ()
    """The literal values the variant changed (every constant under a changed container)."""


def variants(root: Path, tests: list[str]) -> list[Variant]:
    """Up to PER_TEST variants of each test (TOTAL in all); none for a test whose module does not parse."""
    out: list[Variant] = []
    for node in tests:
        rel, *names = node.split("::")
        if not names or not rel.endswith(".py"):
            continue
        names[-1] = names[-1].split("[")[0]
        try:
            text = (root / rel).read_text(encoding="utf-8")
            func = find_function(ast.parse(text), names)
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
            continue
        if func is not None:
            out += _of_function(node, rel, text, func)[:PER_TEST]
    return out[:TOTAL]


def added_literals(changes: list[Change], base: Path) -> list[object]:
    """Constants on the lines a diff adds to source files that the base file does not have anywhere, written
    as literals or computed from them (verify/judges/constructs/folding.py): the tested input, when a fix
    special-cases it. An entry added to a table the module defines is data, not a special case."""
    out: list[object] = []
    for c in changes:
        if c.new_text is None or not c.path.endswith(".py"):
            continue
        try:
            new = ast.parse(c.new_text)
            old = ast.parse((base / c.path).read_text(encoding="utf-8")) if c.kind != "added" else ast.Module([], [])
        except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
            continue
        had = {repr(n.value) for n in ast.walk(old) if isinstance(n, ast.Constant)}
        lines = {n for n, _ in c.added_lines}
        tables = _table_entries(new)
        found = [n.value for n in ast.walk(new) if isinstance(n, ast.Constant) and n.lineno in lines
                 and id(n) not in tables]
        out += [v for v in [*found, *constant_values(new, lines)]
                if not isinstance(v, bool) and v is not None and repr(v) not in had]
    return out


def _table_entries(tree: ast.Module) -> set[int]:
    """The constants written as entries of a table the module or a class defines (a dict's keys and values, a
    list's, tuple's or set's items, assigned at module or class level): data a fix may add ("GBP": 0.85), not a
    special case of the code (`if code == "GBP"`)."""
    out: set[int] = set()
    bodies: list[list[ast.stmt]] = [tree.body]
    while bodies:
        for stmt in bodies.pop():
            if isinstance(stmt, ast.ClassDef):
                bodies.append(stmt.body)
            value = stmt.value if isinstance(stmt, ast.Assign | ast.AnnAssign) else None
            for node in ast.walk(value) if value is not None else ():
                items = [*node.keys, *node.values] if isinstance(node, ast.Dict) else (
                    node.elts if isinstance(node, ast.List | ast.Tuple | ast.Set) else [])
                out.update(id(item) for item in items if isinstance(item, ast.Constant))
    return out


def special_cased(variant: Variant, added: list[object]) -> bool:
    """Whether the diff adds a literal the variant changed: the same value, or a string that begins, ends
    or (two characters or more) lies in it, in any case."""
    for v in variant.inputs:
        for d in added:
            if isinstance(d, bytes | bytearray):
                d = d.decode("utf-8", "replace")
            if type(v) is type(d) and v == d:
                return True
            if isinstance(v, str) and isinstance(d, str) and d:
                v, d = v.casefold(), d.casefold()  # `code.upper() == "EUR"` special-cases "eur" too
                if v.startswith(d) or v.endswith(d) or (len(d) >= 2 and d in v):
                    return True
    return False


def find_function(tree: ast.Module, names: list[str]) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    scope: list[ast.stmt] = tree.body
    for n, name in enumerate(names):
        last = n == len(names) - 1
        found = next((s for s in scope if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
                      and s.name == name), None)
        if found is None:
            return None
        if last:
            return found if not isinstance(found, ast.ClassDef) else None
        if not isinstance(found, ast.ClassDef):
            return None
        scope = found.body
    return None


def _of_function(node: str, rel: str, text: str, func: ast.FunctionDef | ast.AsyncFunctionDef) -> list[Variant]:
    lines = text.splitlines(keepends=True)
    out: list[Variant] = []
    for target, new in _changes(func):
        spelled = _replace(lines, target, new)
        if spelled is not None:
            old = ast.get_source_segment(text, target) or "?"
            values = tuple(n.value for n in ast.walk(target) if isinstance(n, ast.Constant))
            out.append(Variant(node, spelled, f"{rel}:{target.lineno}: {old} -> {new}", values))
    return out


def _changes(func: ast.FunctionDef | ast.AsyncFunctionDef) -> list[tuple[ast.expr, str]]:
    """(node, its new spelling), literal by literal in source order, each literal's variants together."""
    skip = _not_inputs(func)
    body = func.body[1:] if ast.get_docstring(func) is not None else func.body
    found: list[tuple[ast.expr, str]] = []
    for stmt in body:
        for sub in ast.walk(stmt):
            if id(sub) in skip or not isinstance(sub, ast.expr):
                continue
            found += [(sub, new) for new in _respell(sub)]
    return sorted(found, key=lambda c: (c[0].lineno, c[0].col_offset))


def _not_inputs(func: ast.AST) -> set[int]:
    """Nodes that are expected values, matchers or messages, with everything under them."""
    out: set[int] = set()
    for sub in ast.walk(func):
        parts: list[ast.AST] = []
        if isinstance(sub, ast.Compare):
            parts = [c for c in sub.comparators if not isinstance(c, ast.Call)]
        elif isinstance(sub, ast.Assert) and sub.msg is not None:
            parts = [sub.msg]
        elif isinstance(sub, ast.keyword) and sub.arg in ("match", "message", "msg", "reason"):
            parts = [sub.value]
        elif isinstance(sub, ast.JoinedStr):
            parts = [sub]
        elif isinstance(sub, ast.Call) and call_name(sub.func) in ("raises", "assertRaises", "warns", "skip", "fail"):
            parts = list(sub.args)
        elif isinstance(sub, ast.Call) and call_name(sub.func).startswith("assert") and len(sub.args) > 1:
            parts = [a for a in sub.args[1:] if not isinstance(a, ast.Call)]  # self.assertEqual(f(x), EXPECTED)
        for part in parts:
            out |= {id(n) for n in ast.walk(part)}
    return out


def call_name(func: ast.expr) -> str:
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _respell(node: ast.expr) -> list[str]:
    if isinstance(node, ast.Constant) and not isinstance(node.value, bool) and node.lineno == node.end_lineno:
        v = node.value
        if isinstance(v, str):
            return [repr(s) for s in dict.fromkeys((v + "x", "zz" + v[1:], "Q" * max(len(v), 1))) if s != v]
        if isinstance(v, int):
            return [repr(v + 1), repr(v + 17)]
        if isinstance(v, float):
            return [repr(v + 1.5), repr(v * 3 + 0.25)]
    if isinstance(node, ast.List | ast.Tuple | ast.Set) and len(node.elts) >= 2 and node.lineno == node.end_lineno:
        return [_container(node, node.elts[1:])]
    if isinstance(node, ast.Dict) and len(node.keys) >= 2 and None not in node.keys and node.lineno == node.end_lineno:
        return [ast.unparse(ast.Dict(keys=node.keys[1:], values=node.values[1:]))]
    return []


def _container(node: ast.List | ast.Tuple | ast.Set, elts: list[ast.expr]) -> str:
    """The literal without its first item."""
    if isinstance(node, ast.List):
        return ast.unparse(ast.List(elts=elts))
    if isinstance(node, ast.Set):
        return ast.unparse(ast.Set(elts=elts))
    return "(" + ", ".join(ast.unparse(e) for e in elts) + ("," if len(elts) == 1 else "") + ")"


def _replace(lines: list[str], node: ast.expr, new: str) -> str | None:
    """The module text with the node (on one line) spelled `new`; column offsets are UTF-8 bytes."""
    if node.end_col_offset is None or node.lineno != node.end_lineno:
        return None
    line = lines[node.lineno - 1].encode("utf-8")
    edited = line[: node.col_offset] + new.encode("utf-8") + line[node.end_col_offset:]
    out = [*lines]
    out[node.lineno - 1] = edited.decode("utf-8")
    return "".join(out)
