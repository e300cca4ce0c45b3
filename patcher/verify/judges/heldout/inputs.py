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


def imported_names(test_source: str, files: Collection[str]) -> list[tuple[str, str]]:
    """(module, name) of each name the test file imports from a repository module that is not a test's, or reads
    off such a module by attribute."""
    try:
        test = ast.parse(test_source)
    except (SyntaxError, ValueError):
        return []
    files = set(files)
    found: dict[tuple[str, str], None] = {}
    aliases: dict[str, str] = {}
    for node in ast.walk(test):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for a in node.names:
                if _ours(f"{node.module}.{a.name}", files):
                    aliases[a.asname or a.name] = f"{node.module}.{a.name}"
                elif _ours(node.module, files) and a.name != "*":
                    found[(node.module, a.name)] = None
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
    return list(found)[:MAX_NAMES]


def changed_input(base: dict[tuple[str, str], Any], patched: dict[tuple[str, str], Any], tested: Call,
                  shown: str) -> Evidence | None:
    """The refusing evidence where a name holds one of the crash's arguments on the base and another value with
    the diff (values as plain data, by (module, name)); else None."""
    args = [*tested["pos"], *(e for _, e in tested["kw"])]
    for key, was in base.items():
        now = patched.get(key)
        if now is None or now == was or was not in args:
            continue
        module, name = key
        return Evidence("held_out", "test_input_changed", "the fix does not take effect: the crash's own input "
                        "still crashes as on the base, and the failing test passes because the diff changed the "
                        f"value it hands the function ({module}.{name})", refuses=True, reason="policy_violation",
                        quote=f"{module}.{name} is {show_enc(was)} on the base and {show_enc(now)} with the diff; "
                        f"{shown} still crashes")
    return None


def _ours(module: str, files: Collection[str]) -> bool:
    """Whether a dotted name is one of the repository's own modules or packages (at its root or under src/) that
    is not a test's."""
    rel = module.replace(".", "/")
    for top in ("", "src/"):
        for path in (f"{top}{rel}.py", f"{top}{rel}/__init__.py"):
            if path in files and not is_test_path(path):
                return True
    return False
