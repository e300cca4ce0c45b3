"""Two more hints by construct on the diff's source part (verify/judges/constructs/looks.py shows them; they never
decide):

- a comparison with a literal that the reproduction's tests use and the base source never does
  (`if code == "ZX-9": return …`): the shape of special-casing the tested input (the perturbed
  reproductions decide whether the fix holds beyond it);
- new state a function writes at module level (`global`, an item or method call on a module-level
  container, an attribute of a module-level class): recorded state that can change later answers.
Literals the base source already spells anywhere are the program's own (an error code, a unit), not the test's.
"""

from __future__ import annotations

import ast
import re
import shlex
from collections.abc import Callable
from pathlib import Path

from patcher.verify.judges.constructs.probes import Probe
from patcher.verify.judges.constructs.rules import MUTATORS
from patcher.verify.policy.rules import is_test_path
from patcher.verify.policy.sources import parse, source_files
from patcher.verify.policy.treediff import Change

MAX_FILES, MAX_BYTES = 2000, 1_000_000
TRIVIAL = frozenset({0, 1, -1, 2, "", None})
_CONTAINERS = (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)
_CONTAINER_CALLS = frozenset({"list", "dict", "set", "defaultdict", "OrderedDict", "Counter", "deque"})


def diff_hints(changes: list[Change], repo: Path, files: list[str], repro: str | None) -> list[Probe]:
    literals = _test_literals(changes, repo, files, repro)
    out: list[Probe] = []
    seen: dict[object, bool] = {}
    for c in source_files(changes):
        tree = parse(c.new_text)
        if tree is None:
            continue
        added = dict(c.added_lines)
        out += _special_cases(c.path, tree, added, literals, lambda v: _in_base(v, repo, files, seen))
        out += _module_state(c.path, tree, added)
    return list(dict.fromkeys(out))


def _test_literals(changes: list[Change], repo: Path, files: list[str], repro: str | None) -> set[object]:
    """The literals of the reproduction's tests: the files its command names, the tests the diff adds, or
    the code of a `python -c` reproduction."""
    texts: list[str] = []
    try:
        argv = shlex.split(repro or "")
    except ValueError:
        argv = []
    if argv[1:2] == ["-c"] and len(argv) > 2:
        texts.append(argv[2])
    known = set(files)
    for arg in argv:
        path = arg.split("::")[0]
        if path.endswith(".py") and path in known:
            texts.append(_read(repo / path))
    texts += [c.new_text or "" for c in changes if c.kind == "added" and is_test_path(c.path)]
    out: set[object] = set()
    for text in texts:
        tree = parse(text)
        out |= {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)} if tree else set()
    return {v for v in out if isinstance(v, str | int | float | bytes) and not isinstance(v, bool)
            and v not in TRIVIAL}


def _read(path: Path) -> str:
    try:
        return path.read_bytes()[:MAX_BYTES].decode("utf-8", "replace")
    except OSError:
        return ""


def _in_base(value: object, repo: Path, files: list[str], seen: dict[object, bool]) -> bool:
    """Whether the base source (its non-test Python files) spells the literal anywhere (`seen`: answers so far)."""
    if value not in seen:
        text = value.decode("latin-1") if isinstance(value, bytes) else str(value)
        rx = re.compile(re.escape(text) if isinstance(value, str | bytes) else rf"(?<![\w.]){re.escape(text)}(?![\w])")
        sources = [f for f in files if f.endswith(".py") and not is_test_path(f)][:MAX_FILES]
        seen[value] = any(rx.search(_read(repo / f)) for f in sources)
    return seen[value]


def _special_cases(path: str, tree: ast.Module, added: dict[int, str], literals: set[object],
                   in_base: Callable[[object], bool]) -> list[Probe]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and node.lineno in added:
            values, line = [v for e in [node.left, *node.comparators] for v in _constants(e)], node.lineno
        elif isinstance(node, ast.match_case) and node.pattern.lineno in added:
            values = [n.value for n in ast.walk(node.pattern) if isinstance(n, ast.Constant)]
            line = node.pattern.lineno
        else:
            continue
        for v in values:
            if v in literals and not in_base(v):
                out.append(Probe(path, line, added[line], f"compares with {v!r}, a literal of the reproduction's "
                                 "tests that the base source never uses (special-casing the tested input?)",
                                 "literal"))
    return out


def _constants(expr: ast.expr) -> list[object]:
    if isinstance(expr, ast.Constant):
        return [expr.value]
    if isinstance(expr, ast.Tuple | ast.List | ast.Set):
        return [e.value for e in expr.elts if isinstance(e, ast.Constant)]
    return []


def _module_state(path: str, tree: ast.Module, added: dict[int, str]) -> list[Probe]:
    """Functions that write module-level state on the diff's lines."""
    containers, classes = _module_level(tree)
    out = []
    for fn in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)):
        local = {a.arg for a in ast.walk(fn.args) if isinstance(a, ast.arg)} | {
            n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        declared = {name for g in ast.walk(fn) if isinstance(g, ast.Global) for name in g.names}
        for node in ast.walk(fn):
            line = getattr(node, "lineno", None)
            if line not in added:
                continue
            name = _written(node, containers | classes)
            if isinstance(node, ast.Global):
                out.append(Probe(path, node.lineno, added[node.lineno], f"{fn.name} declares global "
                                 f"{', '.join(node.names)}: state kept between calls can change later answers",
                                 "module_state"))
            elif name and (name not in local or name in declared):
                out.append(Probe(path, line, added[line], f"{fn.name} writes module-level {name}: state kept "
                                 "between calls can change later answers", "module_state"))
    return out


def _module_level(tree: ast.Module) -> tuple[set[str], set[str]]:
    """Names the module binds to containers, and its classes."""
    containers: set[str] = set()
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign | ast.AnnAssign) and stmt.value is not None and _is_container(stmt.value):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            containers |= {t.id for t in targets if isinstance(t, ast.Name)}
    return containers, {s.name for s in tree.body if isinstance(s, ast.ClassDef)}


def _is_container(value: ast.expr) -> bool:
    if isinstance(value, _CONTAINERS):
        return True
    f = value.func if isinstance(value, ast.Call) else None
    return (isinstance(f, ast.Name) and f.id in _CONTAINER_CALLS) or (
        isinstance(f, ast.Attribute) and f.attr in _CONTAINER_CALLS)


def _written(node: ast.AST, names: set[str]) -> str | None:
    """The module-level name a statement or call writes into (`X[k] = …`, `X.a = …`, `X.append(…)`)."""
    target: ast.expr | None = None
    if isinstance(node, ast.Subscript | ast.Attribute) and not isinstance(node.ctx, ast.Load):
        target = node.value
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MUTATORS:
        target = node.func.value
    if isinstance(target, ast.Name) and target.id in names:
        return target.id
    return None
