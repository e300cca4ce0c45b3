"""The test's own input changed by the diff: where the tested call still crashes exactly as on the base (the fix
does not take effect, heldrules' `not_in_effect`), but the failing test passes, because the diff changed a
module constant the test imports and hands the function (`GUEST = "guest"` -> `"guest@localhost"` in the
package's samples module, `domain(GUEST)` in the test).

That is a test edit made outside the test files: the crash the user reported still happens for its own input,
and the test no longer asks about it. It refuses (`policy_violation`) only with all of it: the behaviour (the
crash's own arguments still crash the patched code the same way), a module-level constant of a non-test module
whose literal value the diff changed, the failing test's file importing that name (or reading it off its
module), and the crash's recorded arguments holding the constant's old value. A fix in a caller that hands the
function other arguments (a renderer whose output a parser crashed on) changes no constant, and stays verified.
"""

from __future__ import annotations

import ast
from typing import Any

from patcher.verify.heldtarget import Call
from patcher.verify.policy import is_test_path
from patcher.verify.records import Evidence
from patcher.verify.treediff import Change
from sandbox.plain import decode


def changed_input(changes: list[Change], test_source: str, tested: Call, shown: str) -> Evidence | None:
    """The refusing evidence, or None."""
    try:
        test = ast.parse(test_source)
    except (SyntaxError, ValueError):
        return None
    args = _values(tested)
    for change in changes:
        if not change.path.endswith(".py") or is_test_path(change.path) or change.old_text is None:
            continue
        module = change.path[:-3].removesuffix("/__init__").replace("/", ".")
        for name, (old, new) in _constants(change).items():
            if _imported(test, module, name) and any(type(a) is type(old) and a == old for a in args):
                return Evidence("held_out", "test_input_changed", "the fix does not take effect: the crash's own "
                                "input still crashes as on the base, and the failing test passes because the diff "
                                f"changed the constant it hands the function ({module}.{name})", refuses=True,
                                reason="policy_violation",
                                quote=f"{change.path}: {name} = {old!r} -> {new!r}; {shown} still crashes")
    return None


def _values(call: Call) -> list[Any]:
    out = []
    for enc in [*call["pos"], *(e for _, e in call["kw"])]:
        try:
            out.append(decode(enc))
        except (ValueError, TypeError):
            continue
    return out


def _constants(change: Change) -> dict[str, tuple[Any, Any]]:
    """Module-level names bound to a literal on both sides whose value the diff changed: name -> (old, new)."""
    old, new = _literals(change.old_text or ""), _literals(change.new_text or "")
    return {k: (old[k], new[k]) for k in old.keys() & new.keys()
            if old[k] != new[k] or type(old[k]) is not type(new[k])}


def _literals(text: str) -> dict[str, Any]:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return {}
    out: dict[str, Any] = {}
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, ast.AnnAssign) and node.value is not None else []
        value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None
        if value is None:
            continue
        try:
            literal = ast.literal_eval(value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            continue
        for t in targets:
            if isinstance(t, ast.Name):
                out[t.id] = literal
    return out


def _imported(test: ast.Module, module: str, name: str) -> bool:
    """Whether the test file imports `name` from `module`, or reads it off the module (`samples.GUEST`)."""
    aliases: set[str] = set()
    for node in ast.walk(test):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == module and any(a.name == name for a in node.names):
                return True
            parent, _, last = module.rpartition(".")
            aliases |= {a.asname or a.name for a in node.names if node.module == parent and a.name == last}
        elif isinstance(node, ast.Import):
            aliases |= {a.asname for a in node.names if a.name == module and a.asname}
            if any(a.name == module and not a.asname for a in node.names):
                aliases.add(module)
    return any(isinstance(n, ast.Attribute) and n.attr == name and ast.unparse(n.value) in aliases
               for n in ast.walk(test))
