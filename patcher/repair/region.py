"""The part of a file a candidate changed: its top-level statements, old and new, at the file's line numbers.

A template edits one statement (or inserts a guard inside one function), so whether the result compiles,
silences the reported exception (repair/suppress.py), flips its guard or makes a branch dead
(repair/dead.py) is decided inside the top-level statements that hold the change: none of those checks
reads beyond the function (or class, or module-level statement) it is in. Cutting those statements out,
with blank lines in front so every line keeps its number, makes the checks cost the size of a function
instead of the size of the file: on a 4,500-line module each candidate parsed and compiled the whole file
several times over (about a second a candidate). A change outside every top-level statement (between
them, in a comment), or a file with a line break Python counts and this split does not (a lone `\r`),
gives None: the caller then checks the whole texts.
"""

from __future__ import annotations

import ast
import re


def changed_region(tree: ast.Module, old: str, new: str) -> tuple[str, str] | None:
    """(old part, new part): the top-level statements that hold the change, each padded with newlines to
    its line numbers in the file; None when the change is not inside them (check the whole texts)."""
    if "\r" in old.replace("\r\n", "") or "\r" in new.replace("\r\n", ""):
        return None
    a, b = _lines(old), _lines(new)
    prefix = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    room = min(len(a), len(b)) - prefix
    suffix = next((i for i in range(room) if a[-1 - i] != b[-1 - i]), room)
    lo, hi = prefix + 1, max(prefix + 1, len(a) - suffix)  # the changed old lines (an insertion: before lo)
    spans = [(_start(s), s.end_lineno or s.lineno) for s in tree.body]
    held = [(s, e) for s, e in spans if s <= hi and e >= lo]
    if not held:
        return None
    first, last = min(s for s, _ in held), max(e for _, e in held)
    if not (first <= lo and hi <= last) or last > len(a):
        return None
    shift = len(b) - len(a)
    pad = "\n" * (first - 1)
    return pad + "".join(a[first - 1 : last]), pad + "".join(b[first - 1 : last + shift])


def _start(stmt: ast.stmt) -> int:
    decorators = getattr(stmt, "decorator_list", None)
    return decorators[0].lineno if decorators else stmt.lineno


def _lines(text: str) -> list[str]:
    return re.findall(r"[^\n]*\n|[^\n]+$", text)
