"""Values a project's files state, read and never run: the keyword arguments of `setup(...)` in setup.py and
the `session.install(...)` calls of noxfile.py sessions (with `ast`), and the readers of its small text files
(`read_small`, `toml_of`, `cfg_of`: bounded, no symlink followed, a broken file read as empty).

Only what is spelled out is read: literals, names bound at module level to literals, `+` of lists, and
`*NAME` of such a list. Anything computed (a function's result, a file read at build time) is left out.
"""

from __future__ import annotations

import ast
import configparser
import tomllib
from contextlib import suppress
from pathlib import Path
from typing import Any

MAX_SOURCE_BYTES = 1_000_000
UNKNOWN = object()
"""What an expression evaluates to when it is not spelled out statically."""


def parse(source: bytes) -> ast.Module | None:
    if len(source) > MAX_SOURCE_BYTES:
        return None
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None  # a Python 2 setup.py, say: its values are not read


def module_names(tree: ast.Module) -> dict[str, ast.expr]:
    """Module-level `NAME = value` bindings (the last one wins, as when the module runs top to bottom)."""
    names: dict[str, ast.expr] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    names[target.id] = node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            names[node.target.id] = node.value
    return names


def value(node: ast.expr, names: dict[str, ast.expr], depth: int = 0) -> Any:
    """The literal value of `node`, following module-level names; UNKNOWN when it is computed."""
    if depth > 20:
        return UNKNOWN
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        bound = names.get(node.id)
        return UNKNOWN if bound is None else value(bound, names, depth + 1)
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        items: list[Any] = []
        for element in node.elts:
            inner = element.value if isinstance(element, ast.Starred) else element
            got = value(inner, names, depth + 1)
            if got is UNKNOWN:
                continue
            items.extend(got if isinstance(element, ast.Starred) and isinstance(got, list | tuple) else [got])
        return items
    if isinstance(node, ast.Dict):
        return {k: v for k, v in ((value(k, names, depth + 1) if k is not None else UNKNOWN,
                                   value(v, names, depth + 1)) for k, v in zip(node.keys, node.values, strict=True))
                if isinstance(k, str) and v is not UNKNOWN}
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = value(node.left, names, depth + 1), value(node.right, names, depth + 1)
        if isinstance(left, list) and isinstance(right, list):
            return left + right
        if isinstance(left, str) and isinstance(right, str):
            return left + right
    return UNKNOWN


def setup_kwargs(source: bytes) -> dict[str, Any]:
    """The statically known keyword arguments of the module's `setup(...)` call (setuptools or distutils)."""
    tree = parse(source)
    if tree is None:
        return {}
    names = module_names(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _called(node) == "setup":
            found = {kw.arg: value(kw.value, names) for kw in node.keywords if kw.arg}
            for kw in node.keywords:  # setup(**metadata) with a module-level dict literal
                if kw.arg is None and isinstance(spread := value(kw.value, names), dict):
                    found = {**spread, **found}
            return {k: v for k, v in found.items() if v is not UNKNOWN}
    return {}


def nox_installs(source: bytes, wanted: tuple[str, ...]) -> list[tuple[str, list[str]]]:
    """(session name, arguments) of each `session.install(...)` in a nox session whose name has a word of
    `wanted` (tests, test, …), in file order; arguments that are not spelled out are left out."""
    tree = parse(source)
    if tree is None:
        return []
    names = module_names(tree)
    found: list[tuple[str, list[str]]] = []
    for func in tree.body:
        if not isinstance(func, ast.FunctionDef) or not _is_session(func):
            continue
        name = _session_name(func)
        if not set(words(name)) & set(wanted):
            continue
        for node in ast.walk(func):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "install":
                args = value(ast.List(elts=list(node.args)), names)
                found.append((name, [a for a in args if isinstance(a, str)]))
    return found


def words(name: str) -> list[str]:
    """A name's words as packaging normalises them: `Tests_Require` -> ["tests", "require"]."""
    return [w for w in "".join(c if c.isalnum() else " " for c in name.lower()).split() if w]


def _called(call: ast.Call) -> str:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def _is_session(func: ast.FunctionDef) -> bool:
    for deco in func.decorator_list:
        target = deco.func if isinstance(deco, ast.Call) else deco
        if isinstance(target, ast.Attribute) and target.attr == "session":
            return True
        if isinstance(target, ast.Name) and target.id == "session":
            return True
    return False


def _session_name(func: ast.FunctionDef) -> str:
    for deco in func.decorator_list:
        if isinstance(deco, ast.Call):
            for kw in deco.keywords:
                if kw.arg == "name" and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str):
                    return kw.value.value
    return func.name


def read_small(path: Path) -> str:
    """A project file's text; "" for a symlink, a missing file or one over MAX_SOURCE_BYTES."""
    if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_SOURCE_BYTES:
        return ""
    return path.read_text(encoding="utf-8", errors="replace")


def toml_of(text: str) -> dict[str, Any]:
    with suppress(tomllib.TOMLDecodeError):
        return tomllib.loads(text)
    return {}


def cfg_of(text: str) -> configparser.RawConfigParser:
    cfg = configparser.RawConfigParser()
    with suppress(configparser.Error):
        cfg.read_string(text)
    return cfg
