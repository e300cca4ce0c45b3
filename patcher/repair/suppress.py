"""Symptom suppression: edits that silence the reported exception instead of fixing its cause.

The anti-patterns of Tan et al. ("Anti-patterns in Search-Based Program Repair", FSE 2016) that a
passing suite does not catch: the `raise` (or `assert`) that produced the traceback's exception is
deleted; a condition guarding it (the test of an enclosing `if`/`while` in its function, or the
assert's own test) is changed (other than into its complement: guard_flipped); an early
`return`/`continue`/`break` is inserted before it in its function; or an
`except` clause is added or widened so that it catches that exception and discards it. A signing
library whose `if age < 0: raise SignatureExpired` became `if age < -1:` passed its suite and then
accepted expired signatures: that is the shape refused here.

The template engine refuses such candidates; agent diffs of the same shape are flagged, not refused
(`warnings` in the result). Works on the old and new text of one file; changes are found line by line.
"""

from __future__ import annotations

import ast
import difflib
import re
from dataclasses import dataclass
from pathlib import Path

from unidiff import PatchedFile, PatchSet
from unidiff.errors import UnidiffParseError

from patcher.intake import ParsedTraceback, innermost_repo_frames, map_frames
from patcher.repair.site import Func, RepoView, innermost
from patcher.verify import is_test_or_config

_EXIT = re.compile(r"^\s*(return|continue|break)\b", re.M)
_RAISE = re.compile(r"\braise\b")
_BROAD = {"Exception", "BaseException"}


@dataclass(frozen=True)
class RaiseSite:
    """Where the reported exception came from; `line` is 0 when it was raised outside the repo's code."""

    path: str
    line: int
    exc_type: str


def raise_site(parsed: ParsedTraceback | None, view: RepoView) -> RaiseSite | None:
    """The innermost repo frame of the traceback, when it is not a test (tests are never edited)."""
    if parsed is None or not (exc := parsed.exception or next((e for _, e in reversed(parsed.chain) if e), None)):
        return None
    frames = [f for f in innermost_repo_frames(map_frames(parsed, view.files)) if f.repo_path]
    if not frames or is_test_or_config(frames[0].repo_path or ""):
        return None
    frame = frames[0]
    src = view.source(frame.repo_path or "")
    stmt = innermost(src.tree, frame.line, ast.stmt) if src else None
    line = frame.line if isinstance(stmt, ast.Raise | ast.Assert) else 0
    return RaiseSite(frame.repo_path or "", line, exc.type.rsplit(".", 1)[-1])


def suppression(site: RaiseSite | None, path: str, old: str, new: str) -> str | None:
    """Why the change from `old` to `new` of `path` suppresses the reported exception, or None."""
    if site is None or path != site.path:
        return None
    try:
        old_tree, new_tree = ast.parse(old), ast.parse(new)
    except (SyntaxError, ValueError):
        return None
    changed, inserted, new_lines = _changes(old, new)
    if _discarding_handler(new_tree, new_lines, site.exc_type):
        return f"this diff catches the reported {site.exc_type} and discards it"
    return _raise_weakened(site, old_tree, old, new, changed, inserted) if site.line else None


def _changes(old: str, new: str) -> tuple[set[int], dict[int, str], set[int]]:
    """Old lines replaced or deleted; text inserted before an old line (1-based); new lines added or changed."""
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    changed: set[int] = set()
    inserted: dict[int, str] = {}
    new_lines: set[int] = set()
    for tag, i1, i2, j1, j2 in _opcodes(a, b):
        if tag == "equal":
            continue
        changed.update(range(i1 + 1, i2 + 1))
        new_lines.update(range(j1 + 1, j2 + 1))
        if tag == "insert":
            inserted[i1 + 1] = "".join(b[j1:j2])
    return changed, inserted, new_lines


def _opcodes(a: list[str], b: list[str]) -> list[tuple[str, int, int, int, int]]:
    """difflib's opcodes of the lines, only the span between the common head and tail diffed (difflib is
    quadratic on a big function, and an edit is local)."""
    p = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    room = min(len(a), len(b)) - p
    q = next((i for i in range(room) if a[-1 - i] != b[-1 - i]), room)
    ops = difflib.SequenceMatcher(None, a[p : len(a) - q], b[p : len(b) - q], autojunk=False).get_opcodes()
    return [(tag, i1 + p, i2 + p, j1 + p, j2 + p) for tag, i1, i2, j1, j2 in ops]


def _raise_weakened(site: RaiseSite, tree: ast.Module, old: str, new: str, changed: set[int],
                    inserted: dict[int, str]) -> str | None:
    stmt = innermost(tree, site.line, ast.Raise | ast.Assert)
    if not isinstance(stmt, ast.Raise | ast.Assert):
        return None
    lines = set(range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1))
    if isinstance(stmt, ast.Assert) and lines & changed:
        return "this diff weakens the assert that raised the reported exception"
    if lines & changed and not _still_raises(old, new, stmt):
        return "this diff deletes the raise of the reported exception"
    guards, body_start = _guards(tree, stmt)
    for test in guards:
        if set(range(test.lineno, (test.end_lineno or test.lineno) + 1)) & changed:
            if _only_flips(test, old, new):
                continue  # still raises, on the other side: see guard_flipped
            return "this diff weakens the check that raised the reported exception"
    if any(body_start <= at <= stmt.lineno and _EXIT.search(text) for at, text in inserted.items()):
        return "this diff returns early before the raise of the reported exception"
    return None


_COMPLEMENT = {ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot,
               ast.IsNot: ast.Is, ast.Lt: ast.GtE, ast.GtE: ast.Lt, ast.Gt: ast.LtE, ast.LtE: ast.Gt}


def guard_flipped(site: RaiseSite | None, path: str, old: str, new: str) -> bool:
    """The change only turns a test guarding the reported raise into its complement (`==` into `!=`,
    `x` into `not x`). Not a suppression: the raise still fires, for exactly the inputs that did not
    reach it before, so a base test of the other side fails. It is the fix when the guard is the bug
    (more_itertools' `chunked(strict=True)` raising on every full chunk), but it can also offset a bug
    made elsewhere, so the engine tries it after every other candidate."""
    if site is None or not site.line or path != site.path:
        return False
    try:
        tree = ast.parse(old)
    except (SyntaxError, ValueError):
        return False
    stmt = innermost(tree, site.line, ast.Raise | ast.Assert)
    return isinstance(stmt, ast.Raise) and any(_only_flips(t, old, new) for t in _guards(tree, stmt)[0])


def _only_flips(test: ast.expr, old: str, new: str) -> bool:
    """The change is to the lines of `test` alone, line for line, and makes it its complement there."""
    changed, inserted, new_lines = _changes(old, new)
    lines = set(range(test.lineno, (test.end_lineno or test.lineno) + 1))
    return bool(changed) and changed <= lines and new_lines == changed and not inserted and _complemented(test, new)


def _complemented(test: ast.expr, new: str) -> bool:
    """Whether the test at the same place in `new` is the complement of `test` (same operands)."""
    try:
        tree = ast.parse(new)
    except (SyntaxError, ValueError):
        return False
    other = next((n.test for n in ast.walk(tree) if isinstance(n, ast.If)
                  and (n.test.lineno, n.test.col_offset) == (test.lineno, test.col_offset)), None)
    if other is None:
        return False
    for a, b in ((test, other), (other, test)):
        if isinstance(b, ast.UnaryOp) and isinstance(b.op, ast.Not) and ast.dump(b.operand) == ast.dump(a):
            return True
    if not (isinstance(test, ast.Compare) and isinstance(other, ast.Compare)
            and len(test.ops) == len(other.ops) == 1):
        return False
    flipped = _COMPLEMENT.get(type(test.ops[0]))
    return (flipped is not None and isinstance(other.ops[0], flipped) and ast.dump(test.left) == ast.dump(other.left)
            and ast.dump(test.comparators[0]) == ast.dump(other.comparators[0]))


def _still_raises(old: str, new: str, stmt: ast.stmt) -> bool:
    """Whether the lines that replaced the raise still raise (a changed message or type is allowed)."""
    a, b = old.splitlines(), new.splitlines()
    for tag, i1, i2, j1, j2 in _opcodes(a, b):
        if tag != "equal" and i1 < (stmt.end_lineno or stmt.lineno) and i2 >= stmt.lineno:
            return bool(_RAISE.search("\n".join(b[j1:j2])))
    return True


def _guards(tree: ast.Module, stmt: ast.stmt) -> tuple[list[ast.expr], int]:
    """Tests of the `if`/`while` statements enclosing `stmt` in its function, and the function body's first
    line (an exit inserted anywhere between there and the raise skips it)."""
    guards: list[ast.expr] = []
    body_start = 1
    node: ast.AST = tree
    while True:
        child = next((c for c in ast.iter_child_nodes(node) if _contains(c, stmt)), None)
        if child is None or child is stmt:
            return guards, body_start
        if isinstance(child, Func):
            guards, body_start = [], child.body[0].lineno
        elif isinstance(child, ast.If | ast.While):
            guards.append(child.test)
        node = child


def _contains(node: ast.AST, stmt: ast.stmt) -> bool:
    return node is stmt or any(n is stmt for n in ast.walk(node))


def _discarding_handler(tree: ast.Module, new_lines: set[int], exc_type: str) -> bool:
    """An `except` clause the diff added or changed that catches `exc_type` and does nothing with it."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.ExceptHandler) or node.lineno not in new_lines:
            continue
        if _catches(node.type, exc_type) and all(_discards(s) for s in node.body):
            return True
    return False


def _catches(expr: ast.expr | None, exc_type: str) -> bool:
    if expr is None:
        return True
    names = expr.elts if isinstance(expr, ast.Tuple) else [expr]
    return any(_last(n) in ({exc_type} | _BROAD) for n in names)


def _last(node: ast.expr) -> str:
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""


def _discards(stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.Pass | ast.Continue | ast.Break):
        return True
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
        return True
    return isinstance(stmt, ast.Return) and (stmt.value is None or
                                             (isinstance(stmt.value, ast.Constant) and stmt.value.value is None))


def diff_warnings(diff: str, repo: Path, parsed: ParsedTraceback | None) -> list[str]:
    """Review hints for a diff from elsewhere (the agent): the suppression shapes, flagged, not refused."""
    view = RepoView(repo)
    site = raise_site(parsed, view)
    if site is None:
        return []
    try:
        patch = PatchSet(diff)
    except UnidiffParseError:
        return []
    out = []
    for pf in patch:
        path = pf.path
        old = view.text(path) if path == site.path else None
        if old is None:
            continue
        if pf.is_removed_file:
            out.append(f"this diff deletes {path}, where the reported exception was raised")
        elif (new := _patched(old, pf)) is not None and (why := suppression(site, path, old, new)):
            out.append(f"{why} ({path})")
    return out


def _patched(old: str, pf: PatchedFile) -> str | None:
    """The file after the hunks, or None when they do not match it (verification then fails anyway)."""
    lines = old.splitlines(keepends=True)
    out: list[str] = []
    at = 0
    for hunk in pf:
        start = hunk.source_start - (hunk.source_length > 0)
        if start < at or start > len(lines):
            return None
        out += lines[at:start]
        pos = start
        for line in hunk:
            if line.is_context or line.is_removed:
                if pos >= len(lines) or lines[pos].rstrip("\r\n") != line.value.rstrip("\r\n"):
                    return None
                pos += 1
            if line.is_context or line.is_added:
                out.append(line.value)
        at = pos
    return "".join(out + lines[at:])
