"""What the held-out judge calls: one repository function of the crash's stack, with the test's own calls of it.

The recording (sandbox/judge/heldout/record.py) gives the frames the crash passed through, innermost first, each with
the name its function can be called by (or why it cannot) and its arguments as plain data. The function called
is the innermost one that both can be called again and holds the fix: from the innermost frame whose function's
base lines the diff changes (else the innermost frame: the fix is in data or a helper), outwards to the first
that can be called. A failure with no crash frames (an assertion in the test) calls the function of the test's
last call into the repository. Also here: the values the failing test compares answers with (its literals).
"""

from __future__ import annotations

import ast
import difflib
import string
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from patcher.verify.judges.variants import call_name, find_function
from patcher.verify.policy.treediff import Change

CLASSES: tuple[tuple[Callable[[str], bool], str], ...] = (
    (str.isupper, string.ascii_uppercase), (str.islower, string.ascii_lowercase), (str.isdigit, string.digits),
    (str.isspace, " \t\n"), (lambda c: c in string.punctuation, string.punctuation))
"""Character classes: a tested text's kind is the classes of its characters (the inputs drawn, the rules)."""
Call = dict[str, Any]
"""One call as plain data: {"pos": [enc, ...], "kw": [[name, enc], ...]} (sandbox/plain.py)."""


@dataclass(frozen=True)
class Target:
    spec: dict[str, str]
    """{"module", "qualname", "kind"}: how the box finds it (sandbox/judge/heldout/names.py)."""
    tested: Call
    """The crash's own call of it (or the test's last call, for an assertion's failure)."""
    calls: list[Call] = field(default_factory=list)
    """Every call the test made of it, in order, the tested one included: the reproduction's calls."""
    crash: bool = True
    """Whether the test failed by a crash through this function (else: an assertion on its answer)."""
    file: str = ""
    """The function's file (the base's), whose constants seed the inputs."""
    holds_fix: bool = False
    """Whether the diff changes the function's own lines (else the fix is in data, a helper or a caller)."""

    @property
    def name(self) -> str:
        return f"{self.spec['module']}.{self.spec['qualname']}"

    @property
    def short(self) -> str:
        return self.spec["qualname"].rsplit(".", 1)[-1]


def choose(record: dict[str, Any], changes: list[Change], base: Path) -> tuple[Target | None, str]:
    """The function to call for one failed test's record (`base`: the base tree), or None and why none can be."""
    frames = [f for f in record.get("frames") or [] if isinstance(f, dict)]
    if not frames:
        direct = [f for f in record.get("direct") or [] if isinstance(f, dict) and f.get("call")]
        if not direct:
            return None, "the test made no call of a repository function that can be made again from plain data"
        last = direct[-1]
        if not last.get("target"):
            return None, f"the test's last call into the repository ({last.get('func')}) cannot be made again by " \
                         f"name ({last.get('why') or 'no name leads to it'})"
        return _target(last, record, crash=False), ""
    changed = _changed_base_lines(changes)
    _with_ends(frames, base)
    start = next((n for n, f in enumerate(frames) if _holds_change(f, changed)), 0)
    for f in [*frames[start:], *reversed(frames[:start])]:
        if f.get("target") and f.get("call"):
            return _target(f, record, crash=True, holds_fix=_holds_change(f, changed)), ""
    why = "; ".join(f"{f.get('func')}: {f.get('why')}" for f in frames[:3])
    return None, f"no function on the crash's stack can be called again from plain data ({why})"


def in_run(record: dict[str, Any], changes: list[Change], base: Path
           ) -> tuple[dict[str, Any] | None, Target | None, str]:
    """The frame whose call is asked inside the test's own run (heldout/inrun.py), and its Target for the rules: as
    `choose` picks, innermost first from the frame that holds the change, any function the test's run reaches
    (its arguments need not be plain data: what is not stays the live object), a coroutine's frame excepted; for
    an assertion's failure, the test's last call into the repository. None and why when there is none."""
    frames = [f for f in record.get("frames") or [] if isinstance(f, dict)]
    crash = bool(frames)
    if not frames:
        frames = [f for f in record.get("direct") or [] if isinstance(f, dict)][-1:]
    changed = _changed_base_lines(changes)
    _with_ends(frames, base)
    start = next((n for n, f in enumerate(frames) if _holds_change(f, changed)), 0) if crash else 0
    for f in [*frames[start:], *reversed(frames[:start])]:
        if f.get("full") and not f.get("coroutine"):
            qual = str(f.get("qualname") or f.get("func"))
            module = str(f.get("file") or "")[:-3].replace("/", ".")
            spec = dict(f.get("target") or {"module": module, "qualname": qual,
                                             "kind": "method" if "." in qual and "<" not in qual else "function"})
            if spec.get("kind") == "class":
                spec["kind"] = "method"  # the whole call: its class is the first argument, as a method's instance
            tested = f["full"]
            return f, Target(spec, tested, [tested], crash, str(f.get("file") or "")), ""
    return None, None, "the test made no call of a repository function the judge can ask again inside its run"


def _target(frame: dict[str, Any], record: dict[str, Any], crash: bool, holds_fix: bool = False) -> Target:
    tested = frame["call"]
    calls = [c for c in (record.get("calls") or {}).get(frame.get("key"), []) if isinstance(c, dict)]
    if tested not in calls:
        calls.append(tested)
    if not crash:  # the test's last call is the one the failing assertion judged: what came after it is not
        calls = calls[: calls.index(tested) + 1] if tested in calls else [tested]
    return Target(dict(frame["target"]), tested, calls, crash, str(frame.get("file") or ""), holds_fix)


def _changed_base_lines(changes: list[Change]) -> dict[str, set[int]]:
    """Lines of each base file the diff replaced or deleted, and the lines either side of an insertion."""
    out: dict[str, set[int]] = {}
    for c in changes:
        if c.kind != "modified" or c.old_text is None or c.new_text is None:
            continue
        old, new = c.old_text.splitlines(), c.new_text.splitlines()
        lines = out.setdefault(c.path, set())
        for tag, i1, i2, _, _ in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
            if tag in ("replace", "delete"):
                lines.update(range(i1 + 1, i2 + 1))
            elif tag == "insert":
                lines.update((i1, i1 + 1))
    return out


def _holds_change(frame: dict[str, Any], changed: dict[str, set[int]]) -> bool:
    lines = changed.get(str(frame.get("file")))
    if not lines:
        return False
    first = int(frame.get("first") or 0)
    last = frame.get("last") or first
    return any(first <= n <= int(last) for n in lines)


def _with_ends(frames: list[dict[str, Any]], root: Path) -> None:
    """Each frame's last line (its function's end in the base file), for `_holds_change`."""
    trees: dict[str, ast.Module | None] = {}
    for f in frames:
        rel = str(f.get("file"))
        if rel not in trees:
            try:
                trees[rel] = ast.parse((root / rel).read_text(encoding="utf-8"))
            except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
                trees[rel] = None
        tree, first = trees[rel], int(f.get("first") or 0)
        f["last"] = first
        for node in ast.walk(tree) if tree is not None else ():
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                starts = [node.lineno, *(d.lineno for d in node.decorator_list)]
                if first in starts:
                    f["last"] = node.end_lineno or first
                    break


def constants(root: Path, rel: str, per_type: int = 40) -> list[Any]:
    """The constants (text, bytes, numbers) written in a base module: its tables' keys and values among them."""
    try:
        tree = ast.parse((root / rel).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return []
    found: dict[type, dict[Any, None]] = {}
    for node in ast.walk(tree):
        value = node.value if isinstance(node, ast.Constant) else None
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
            number = node.operand.value  # `-1` is USub(1)
            value = -number if isinstance(number, int | float) and not isinstance(number, bool) else None
        if type(value) in (str, bytes, int, float):
            kept = found.setdefault(type(value), {})
            if len(kept) < per_type and len(repr(value)) <= 200:
                kept[value] = None
    return [v for kept in found.values() for v in kept]


def expected_values(root: Path, node_id: str) -> list[Any]:
    """Literal values the test compares answers with: the literal sides of its comparisons and of its
    assert*() calls' arguments (items of literal tuples and lists too)."""
    rel, *names = node_id.split("::")
    try:
        tree = ast.parse((root / rel).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return []
    func = find_function(tree, [n.split("[")[0] for n in names])
    out: list[Any] = []
    for sub in ast.walk(func) if func is not None else ():
        sides: list[ast.expr] = []
        if isinstance(sub, ast.Compare):
            sides = [sub.left, *sub.comparators]
        elif isinstance(sub, ast.Call) and call_name(sub.func).startswith("assert"):
            sides = list(sub.args)
        for side in sides:
            out += _literals(side)
    return out


def _literals(node: ast.expr) -> list[Any]:
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return []
    return [value, *value] if isinstance(value, tuple | list) else [value]


def class_of(ch: str) -> str:
    """The characters of `ch`'s class (upper, lower, digit, space, punctuation), else `ch` alone."""
    for test, members in CLASSES:
        if test(ch):
            return members
    return ch
