"""A wrong identifier or attribute replaced by the nearest name in scope.

For a NameError or AttributeError the exception names the wrong identifier (and CPython ≥3.10 often
adds "Did you mean: 'x'?", tried first); the pool is the names bound in the function and the module
plus builtins, or the attributes of the class or module the message names. Other exceptions get
nothing here: a near name that happens to make a weak test pass (`e == 1` for `n == 1`) is a guess,
left to patterns.other_name, which the ranking tries last.
"""

from __future__ import annotations

import ast
import builtins
import re
from collections.abc import Iterable, Iterator

from patcher.repair.edits import Edit, Source
from patcher.repair.site import Fix, Func, Site

_NAME = re.compile(r"name '(?P<name>\w+)' is not defined")
_ATTR = re.compile(
    r"(?:(?P<module>module)|type object|'?)\s*'?(?P<owner>[\w.]+)'?(?: object)? has no attribute '(?P<attr>\w+)'"
)
_HINT = re.compile(r"Did you mean: '(?P<hint>\w+)'\?")
_MAX_OPTIONS = 3


def wrong_name(site: Site) -> Iterator[Fix]:
    name_error = _NAME.search(site.message) if site.exc_type in ("NameError", "") else None
    attr_error = _ATTR.search(site.message) if site.exc_type == "AttributeError" else None
    hint = m["hint"] if (m := _HINT.search(site.message)) else None
    if not (name_error or attr_error):
        return  # a name the exception does not point at: patterns.other_name tries those, with a lower prior
    func = site.function()
    for node in site.nodes(ast.Name, ast.Attribute):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and not attr_error:
            if name_error and node.id != name_error["name"]:
                continue
            pool = _scope(site.src, func, builtins=True) if name_error else local_names(func)
            for new in _nearest(node.id, pool, hint if name_error else None, strict=not name_error):
                yield site.fix(f"`{node.id}` → `{new}`", Edit(*site.src.span(node), new))
        elif isinstance(node, ast.Attribute) and attr_error and node.attr == attr_error["attr"]:
            if attr_error["owner"] == "NoneType":
                continue
            end = site.src.span(node)[1]
            pool = _attributes(site, attr_error["owner"], bool(attr_error["module"]))
            for new in _nearest(node.attr, pool, hint, strict=False):
                yield site.fix(f"`.{node.attr}` → `.{new}`", Edit(end - len(node.attr), end, new))


def _nearest(name: str, pool: Iterable[str], hint: str | None, strict: bool) -> list[str]:
    limit = 1 if strict or len(name) <= 4 else min(3, len(name) // 3)
    scored = sorted((d, p) for p in set(pool) if p != name and (d := _distance(name, p)) <= limit)
    options = ([hint] if hint and hint != name else []) + [p for _, p in scored]
    return list(dict.fromkeys(options))[:_MAX_OPTIONS]


def _distance(a: str, b: str) -> float:
    """Optimal string alignment distance (a transposition costs 1); a case-only difference costs 0.5."""
    if a.lower() == b.lower():
        return 0.5
    if abs(len(a) - len(b)) > 3:
        return 99
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        prev2, prev = prev, cur
    return prev[-1]


def local_names(func: Func | None) -> set[str]:
    """The names `func` binds: its parameters and every name its body assigns, defines or imports."""
    if func is None:
        return set()
    args = func.args
    names = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg] if a}
    return names | _bound(func.body)


def _bound(body: list[ast.stmt]) -> set[str]:
    names: set[str] = set()
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.alias):
                names.add((node.asname or node.name).split(".")[0])
            elif isinstance(node, ast.ExceptHandler) and node.name:
                names.add(node.name)
    return names


def _scope(src: Source, func: Func | None, builtins: bool) -> set[str]:
    module = {n for n in _bound([s for s in src.tree.body if not isinstance(s, Func | ast.ClassDef)])}
    module |= {s.name for s in src.tree.body if isinstance(s, Func | ast.ClassDef)}
    return local_names(func) | module | (_BUILTINS if builtins else set())


_BUILTINS = {n for n in dir(builtins) if not n.startswith("_")}


def _attributes(site: Site, owner: str, is_module: bool) -> set[str]:
    if is_module:
        module = site.repo.module(owner)
        return _scope(module, None, builtins=False) if module else set()
    builtin = getattr(builtins, owner, None)
    if isinstance(builtin, type):
        return {n for n in dir(builtin) if not n.startswith("_")}
    names: set[str] = set()
    for cls in site.repo.classes(owner):
        names |= _class_attributes(cls)
        for base in cls.bases:
            if isinstance(base, ast.Name):
                names |= {n for c in site.repo.classes(base.id) for n in _class_attributes(c)}
    return names or _module_attributes(site.src)


def _class_attributes(cls: ast.ClassDef) -> set[str]:
    names = _bound([s for s in cls.body if not isinstance(s, Func)])
    names |= {s.name for s in cls.body if isinstance(s, Func)}
    for node in ast.walk(cls):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and _is_self(node.value):
            names.add(node.attr)
    return names


def _is_self(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id in ("self", "cls")


def _module_attributes(src: Source) -> set[str]:
    names = {n.attr for n in src.walk(ast.Attribute)}
    return names | {n.name for n in [*src.walk(ast.FunctionDef), *src.walk(ast.AsyncFunctionDef)]}
