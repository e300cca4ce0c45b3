"""Templates for the bug kinds real libraries showed (issue 28): a missing bounds condition before an
index, a variable left unbound by one branch, and a wrong key in a lookup.

- `bounds_guard` (IndexError): a subscript `s[i]` read in a condition gets the bound in front of it
  (`len(s) > i and s[i] …`, `s and s[0] …`); a statement that reads one gets `if len(s) <= i: return None`
  (or `continue`/`break` in a `for` loop, `break` in a `while`) before it.
- `unbound_init` (UnboundLocalError): the name set to None (or the empty value of its first assignment's
  kind) before the statement of the function that first assigns it, unless that assignment is in a `try`
  (an exception a handler swallowed left it unbound: setting it would hide that); and where a branch of an `if`
  assigns the name and another does not, the branch that does not gets the name added to its own
  chained assignment (`a = b = e` beside `a = e`: the missing `= b`), or the name is set before the `if`
  to what the other branch sets it to, or to None.
- `wrong_key` (KeyError): the constant key on the line replaced by the keys the file uses that are most
  like it (dict literals, subscripts, `.get`/`.pop` arguments).
A guard before a `raise` of the same exception, or a changed condition of one, is refused by
repair/suppress.py like any other candidate: these add conditions, they must not hide the raise.
"""

from __future__ import annotations

import ast
import difflib
import re
from collections.abc import Iterator

from patcher.repair.edits import Edit
from patcher.repair.site import Fix, Site, innermost
from patcher.repair.templates import int_literal

_UNBOUND = re.compile(r"local variable '(\w+)'|variable '(\w+)' where")
_MAX_KEYS = 6


def bounds_guard(site: Site) -> Iterator[Fix]:
    """For an IndexError: the bound of `s[i]` as a condition in front of it, or a guard statement."""
    if site.exc_type != "IndexError":
        return
    tests = _tests(site)
    for sub in site.nodes(ast.Subscript):
        if not isinstance(sub.ctx, ast.Load) or isinstance(sub.slice, ast.Slice | ast.Tuple):
            continue
        seq, index = site.src.segment(sub.value), sub.slice
        value = int_literal(index)
        if value is None and not isinstance(index, ast.Name | ast.Attribute | ast.BinOp):
            continue
        bounds = [seq, f"len({seq}) > 0"] if value in (0, -1) else [
            f"len({seq}) > {value}" if value is not None else f"{site.src.segment(index)} < len({seq})"]
        for test in tests:
            if _inside(sub, test):
                start = site.src.span(test)[0]
                for bound in bounds:
                    yield site.fix(f"`{site.src.segment(test)}` → `{bound} and …`", Edit(start, start, f"{bound} and "))
        yield from _guard_before(site, f"not {seq}" if value in (0, -1) else _negate(bounds[0]))


def _tests(site: Site) -> list[ast.expr]:
    """Conditions on the line: of an `if`/`while`/`elif`, a ternary, an `assert`, a comprehension's `if`."""
    out: list[ast.expr] = []
    for node in site.nodes(ast.If, ast.While, ast.IfExp, ast.Assert, ast.comprehension):
        out += node.ifs if isinstance(node, ast.comprehension) else [node.test]
    for node in site.src.by_line.get(site.line, []):
        if isinstance(node, ast.comprehension):
            out += node.ifs
    return [t for t in out if t.lineno == site.line]


def _inside(node: ast.AST, tree: ast.AST) -> bool:
    return any(n is node for n in ast.walk(tree))


def _negate(bound: str) -> str:
    if " > " in bound:
        left, right = bound.split(" > ", 1)
        return f"{left} <= {right}"
    left, right = bound.split(" < ", 1)
    return f"{left} >= {right}"


def _guard_before(site: Site, test: str) -> Iterator[Fix]:
    stmt, func = site.statement(), site.function()
    if stmt is None or func is None or stmt is func or isinstance(stmt, ast.If | ast.While | ast.ClassDef):
        return
    src = site.src
    line = src.line(stmt.lineno)
    indent = line[: len(line) - len(line.lstrip())]
    if src.offset(stmt.lineno, stmt.col_offset) != src.starts[stmt.lineno - 1] + len(indent):
        return
    loop = innermost(func, stmt.lineno, ast.For | ast.AsyncFor | ast.While)
    # `continue` in a `while` usually skips what moves it on: a loop that never ends, checked to its deadline
    exits = ["continue", "break"] if isinstance(loop, ast.For | ast.AsyncFor) else ["break"] if loop else []
    at, nl, unit = src.starts[stmt.lineno - 1], src.newline(), src.indent_unit()
    for body in ["return None", *exits]:
        yield site.fix(f"insert `if {test}: {body}` before line {stmt.lineno}",
                       Edit(at, at, f"{indent}if {test}:{nl}{indent}{unit}{body}{nl}"))


def unbound_init(site: Site) -> Iterator[Fix]:
    """For an UnboundLocalError on `name`: assign it in the branch that does not (see module doc)."""
    found = _UNBOUND.search(site.message) if site.exc_type == "UnboundLocalError" else None
    func = site.function()
    if found is None or func is None:
        return
    name = found.group(1) or found.group(2)
    first = min((n for n in ast.walk(func) if isinstance(n, ast.Assign | ast.AugAssign | ast.AnnAssign | ast.For)
                 and name in _targets(n)), key=lambda n: n.lineno, default=None)
    in_try = first is not None and any(isinstance(t, ast.Try) and any(first is n for b in t.body for n in ast.walk(b))
                                       for t in ast.walk(func))
    if first is not None and first.lineno < site.line and not in_try:  # an exception left it unbound: no
        top = next((s for s in func.body if s.lineno <= first.lineno <= (s.end_lineno or s.lineno)), None)
        value = first.value if isinstance(first, ast.Assign) else None
        yield from _before(site, top, name, ["None", *_neutral(value)]) if top else iter(())
    for node in ast.walk(func):
        if not isinstance(node, ast.If) or node.lineno >= site.line:
            continue
        branches = [node.body, node.orelse]
        sets = [_assigns(b, name) for b in branches]
        if not any(sets) or all(sets):
            continue
        donor = next(a for a in sets if a)
        yield from _chain(site, donor, branches[sets.index(None)], name)
        yield from _before(site, node, name, [site.src.segment(donor.value), "None"])


def _targets(node: ast.AST) -> set[str]:
    targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
    return {n.id for t in targets if t is not None for n in ast.walk(t) if isinstance(n, ast.Name)}


def _neutral(value: ast.expr | None) -> list[str]:
    """The empty value of the first assignment's kind: `0`, `""`, `[]`, `{}`, `()`, `False`."""
    if isinstance(value, ast.Constant):
        kind = type(value.value)
        return {int: ["0"], float: ["0.0"], str: ['""'], bool: ["False"], bytes: ['b""']}.get(kind, [])
    empty = {ast.List: "[]", ast.ListComp: "[]", ast.Dict: "{}", ast.DictComp: "{}", ast.Tuple: "()"}
    return [empty[type(value)]] if type(value) in empty else []


def _assigns(body: list[ast.stmt], name: str) -> ast.Assign | None:
    """The last plain assignment to `name` directly in `body` (an `elif` counts as the rest of the chain)."""
    for stmt in reversed(body):
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in stmt.targets):
            return stmt
        if isinstance(stmt, ast.If) and (a := _assigns(stmt.body, name)) and _assigns(stmt.orelse, name):
            return a
    return None


def _chain(site: Site, donor: ast.Assign, lacking: list[ast.stmt], name: str) -> Iterator[Fix]:
    """`a = b = e` in one branch, `a = e2` in the other: `a = b = e2` (the name where the donor has it)."""
    at_index = next(i for i, t in enumerate(donor.targets) if isinstance(t, ast.Name) and t.id == name)
    others = {t.id for t in donor.targets if isinstance(t, ast.Name) and t.id != name}
    for stmt in (n for s in lacking for n in ast.walk(s)):
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id in others for t in stmt.targets) \
                and name not in _targets(stmt):
            before = stmt.targets[at_index] if at_index < len(stmt.targets) else stmt.value
            at = site.src.span(before)[0]
            yield Fix(site.src, stmt.lineno, f"`{site.src.segment(stmt).splitlines()[0]}` also assigns `{name}`",
                      (Edit(at, at, f"{name} = "),))


def _before(site: Site, node: ast.stmt, name: str, values: list[str]) -> Iterator[Fix]:
    src = site.src
    line = src.line(node.lineno)
    indent = line[: len(line) - len(line.lstrip())]
    if src.offset(node.lineno, node.col_offset) != src.starts[node.lineno - 1] + len(indent):
        return
    at, nl = src.starts[node.lineno - 1], src.newline()
    for init in dict.fromkeys([v for v in values if "\n" not in v and len(v) <= 60]):
        yield Fix(src, node.lineno, f"initialise `{name} = {init}` before line {node.lineno}",
                  (Edit(at, at, f"{indent}{name} = {init}{nl}"),))


def wrong_key(site: Site) -> Iterator[Fix]:
    """For a KeyError on a constant key: the file's keys most like it, in its place."""
    if site.exc_type != "KeyError" or isinstance(site.statement(), ast.Raise):
        return  # the key in a `raise KeyError(d["k"])` only words the error
    keys = _file_keys(site.src.tree)
    for sub in site.nodes(ast.Subscript):
        key = sub.slice
        if not isinstance(sub.ctx, ast.Load) or not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            continue
        pool = [k for k in keys if k != key.value]
        close = difflib.get_close_matches(key.value, pool, n=_MAX_KEYS, cutoff=0.0)
        quote = site.src.segment(key)[:1]
        for new in close:
            text = f"{quote}{new}{quote}" if quote in "'\"" and quote not in new and "\\" not in new else repr(new)
            yield site.fix(f"key `{key.value!r}` → `{new!r}`", Edit(*site.src.span(key), text))


def _file_keys(tree: ast.Module) -> list[str]:
    keys: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            keys.update(k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str))
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            keys.update([node.slice.value] if isinstance(node.slice.value, str) else [])
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in (
                "get", "pop", "setdefault") and node.args and isinstance(node.args[0], ast.Constant):
            keys.update([node.args[0].value] if isinstance(node.args[0].value, str) else [])
    return sorted(keys)
