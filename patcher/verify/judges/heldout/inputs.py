"""The test's own input changed by the diff: where the tested call still crashes exactly as on the base (the fix
does not take effect, the held-out rules' `not_in_effect`), but the failing test passes, because the diff changed a
module-level value the test imports and hands the function (`GUEST = "guest"` -> `"guest@localhost"` in the
package's samples module, `domain(GUEST)` in the test).

That is a test edit made outside the test files: the crash the user reported still happens for its own input,
and the test no longer asks about it. The names the failing test's file imports from the repository's own
(non-test) modules, or reads off them (`samples.GUEST`), are read in the box on the base and with the diff
(sandbox/judge/heldout/values.py: the modules imported as the test imports them), so the change shows however it
is spelled (an assignment, `+=`, a write from the package's `__init__`). It refuses (`policy_violation`) where
one of them holds one of the crash's own arguments on the base and another value with the diff. A fix in a
caller that hands the function other arguments (a renderer whose output a parser crashed on) changes no value
the test imports, and stays verified.
"""

from __future__ import annotations

import ast
from collections.abc import Collection
from typing import Any

from patcher.verify.judges.heldout.target import Call
from patcher.verify.policy.rules import is_test_path
from patcher.verify.records import Evidence
from sandbox.plain import show_enc

MAX_NAMES = 40
MAX_STEPS = 4


Read = tuple[Any, ...]
"""(module, name) of a name the test imports, or (module, name, steps) of a value it reads below one: each step
("i", key) for a subscript by a constant (text, integer), ("a", attribute) for an attribute."""


def imported_names(test_source: str, files: Collection[str]) -> list[Read]:
    """(module, name) of each name the test file imports from a repository module that is not a test's, or reads
    off such a module by attribute; and (module, name, steps) of each value the test reads below such a name by
    constant subscripts and attributes (`BASKET["coupon"]`, `samples.USER.email`)."""
    try:
        test = ast.parse(test_source)
    except (SyntaxError, ValueError):
        return []
    files = set(files)
    found: dict[Read, None] = {}
    aliases: dict[str, str] = {}
    local: dict[str, tuple[str, str]] = {}
    for node in ast.walk(test):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for a in node.names:
                if _ours(f"{node.module}.{a.name}", files):
                    aliases[a.asname or a.name] = f"{node.module}.{a.name}"
                elif _ours(node.module, files) and a.name != "*":
                    found[(node.module, a.name)] = None
                    local[a.asname or a.name] = (node.module, a.name)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.asname and _ours(a.name, files):
                    aliases[a.asname] = a.name
                elif _ours(a.name, files):
                    aliases[a.name] = a.name
    for node in ast.walk(test):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            module = aliases.get(ast.unparse(node.value))
            if module is not None and not _ours(f"{module}.{node.attr}", files):
                found[(module, node.attr)] = None
    for node in ast.walk(test):
        read = _below(node, local, aliases, files)
        if read is not None:
            found[read] = None
    return list(found)[:MAX_NAMES]


def _below(node: ast.AST, local: dict[str, tuple[str, str]], aliases: dict[str, str], files: set[str]
           ) -> Read | None:
    """(module, name, steps) where `node` reads below an imported name by constant subscripts and attributes."""
    steps: list[tuple[str, Any]] = []
    while isinstance(node, (ast.Subscript, ast.Attribute)) and len(steps) < MAX_STEPS:
        if isinstance(node, ast.Subscript):
            key = node.slice
            if not isinstance(key, ast.Constant) or not isinstance(key.value, (str, int, bool)):
                return None
            steps.insert(0, ("i", key.value))
        else:
            root = aliases.get(ast.unparse(node.value)) if isinstance(node.value, (ast.Name, ast.Attribute)) else None
            if root is not None and steps and not _ours(f"{root}.{node.attr}", files):
                return (root, node.attr, tuple(steps))
            steps.insert(0, ("a", node.attr))
        node = node.value
    if steps and isinstance(node, ast.Name) and node.id in local:
        return (*local[node.id], tuple(steps))
    return None


def changed_input(base: dict[Read, Any], patched: dict[Read, Any], tested: Call, shown: str) -> Evidence | None:
    """The refusing evidence where a name (or a value the test reads below one) holds one of the crash's arguments
    on the base and another value with the diff (values as plain data, by Read); else None."""
    args = [*tested["pos"], *(e for _, e in tested["kw"])]
    for key, was in base.items():
        now = patched.get(key)
        if now is None or now == was or was not in args:
            continue
        where = spelled(key)
        return Evidence("held_out", "test_input_changed", "the fix does not take effect: the crash's own input "
                        "still crashes as on the base, and the failing test passes because the diff changed the "
                        f"value it hands the function ({where})", refuses=True, reason="policy_violation",
                        quote=f"{where} is {show_enc(was)} on the base and {show_enc(now)} with the diff; "
                        f"{shown} still crashes")
    return None


def spelled(read: Read) -> str:
    """`module.NAME["key"].attr` for a Read."""
    steps = "".join(f"[{v!r}]" if kind == "i" else f".{v}" for kind, v in (read[2] if len(read) > 2 else ()))
    return f"{read[0]}.{read[1]}{steps}"


def _ours(module: str, files: Collection[str]) -> bool:
    """Whether a dotted name is one of the repository's own modules or packages (at its root or under src/) that
    is not a test's."""
    rel = module.replace(".", "/")
    for top in ("", "src/"):
        for path in (f"{top}{rel}.py", f"{top}{rel}/__init__.py"):
            if path in files and not is_test_path(path):
                return True
    return False
