"""A frame's function as Python names it (its code object's `co_name`) where the traceback does not print it.

The harness reports each frame a test failed through by `co_name`; the crash site must use the same name.
`File "…", line N, in NAME` and pytest's `--tb=short` print it. pytest's long format (`--tb=long`, and the
first and last entries of the default `--tb=auto`) prints the frame's source instead, from its code
object's first line to the failing statement (`>`); `--tb=line` prints only the location.

- From the printed source (`printed_function`): the innermost `def`/`class` whose body holds the `>` line,
  found by indentation (a nested function closed before that line is not it; decorators sit above). When
  none encloses it, the frame's code starts on the `>` line itself: a lambda, a comprehension or generator
  expression (pytest then shows their implicit argument `.0`), or module code: `<lambda>`, `<genexpr>`,
  `<listcomp>`, `<setcomp>`, `<dictcomp>` (Python 3.11 and older; 3.12 inlines the last three) when the
  line holds exactly one such construct, else unknown ("").
- From the repository's source (`source_function`), for a frame still unknown: the innermost def/class
  whose body holds the line, by `ast`, unless a lambda or comprehension on that line makes it ambiguous.
- Files are read from the staging copy only: no path component may be a symlink, a regular file under a
  size cap, UTF-8 (`read_repo_text`).
"""

from __future__ import annotations

import ast
import os
import re
import stat
from pathlib import Path

from patcher.intake.tbtext import indent

MAX_SOURCE_BYTES = 1_000_000
INLINED = frozenset({"<listcomp>", "<setcomp>", "<dictcomp>"})
"""Frames of Python 3.11 and older that Python 3.12 runs inside the enclosing function (PEP 709)."""

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_HEADER = re.compile(r"\s*(?:async\s+def|def|class)\s+(?P<name>\w+)")
_IMPLICIT_ARG = re.compile(r"\.0 = ")
_PYTEST_INDENT = 4
"""pytest indents source lines by 4 (the `>` line: `>` and 3); a frame's arguments above them start at 0."""
_SCOPES: dict[type[ast.AST], str] = {ast.Lambda: "<lambda>", ast.GeneratorExp: "<genexpr>",
                                     ast.ListComp: "<listcomp>", ast.SetComp: "<setcomp>",
                                     ast.DictComp: "<dictcomp>"}


def printed_function(lines: list[str], at: int) -> str:
    """The function of a pytest long entry: `lines` are the entry's lines, `lines[at]` the `>` line.

    pytest prints a frame's source from its code's first line: the frame's own `def` (or `class`), after
    its decorators, is the first header at the block's own indentation; nothing nested or quoted inside
    counts, since that is indented deeper."""
    source = [" " + line[1:] if line.startswith(">") else line for line in lines[: at + 1]]
    start = next(i for i, line in enumerate(source) if indent(line) >= _PYTEST_INDENT or i == at)
    base = indent(source[start])
    for line in source[start:]:
        if indent(line) != base:
            continue  # a decorator's arguments, the header's continuation lines, the body
        if m := _HEADER.match(line):
            return m["name"]
        if not line.lstrip().startswith(("@", ")", "]", "}")):
            break
    if start != at or not (any(_IMPLICIT_ARG.match(line) for line in lines[:at]) or "lambda" in lines[at]):
        return ""  # module code, or nothing to tell by
    return _only_scope(lines[at][1:].strip())


def _only_scope(text: str) -> str:
    try:
        tree = ast.parse(text.removesuffix(":"))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ""
    kinds = {_SCOPES[type(node)] for node in ast.walk(tree) if type(node) in _SCOPES}
    return kinds.pop() if len(kinds) == 1 else ""


def source_function(text: str, line: int) -> str:
    """co_name of the code running `line` of a module's source; "" when unknown or ambiguous."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ""
    name = "<module>"
    for node in ast.walk(tree):
        start, end = getattr(node, "lineno", 0), getattr(node, "end_lineno", None) or 0
        if type(node) in _SCOPES and start <= line <= end:
            return ""  # the line may run in the construct's frame or around it
        # The body only: decorators, defaults and bases run in the enclosing scope. ast.walk goes breadth
        # first, so an inner scope comes later and wins.
        if isinstance(node, _DEFS) and _first_line(node.body[0]) <= line <= end:
            name = node.name
    return name


def _first_line(stmt: ast.stmt) -> int:
    decorators = getattr(stmt, "decorator_list", None) or []
    return min([stmt.lineno, *(d.lineno for d in decorators)])


def read_repo_text(root: Path, rel: str, max_bytes: int = MAX_SOURCE_BYTES) -> str | None:
    """The file's text if it is a regular UTF-8 file under the size cap reached through no symlink."""
    parts = rel.split("/")
    if not rel or any(p in ("", ".", "..") for p in parts):
        return None
    path = root
    for part in parts:
        path = path / part
        try:
            info = os.lstat(path)
        except OSError:
            return None
        if stat.S_ISLNK(info.st_mode):
            return None
    if not stat.S_ISREG(info.st_mode) or info.st_size > max_bytes:
        return None
    try:
        text = path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    return None if text.startswith("\ufeff") else text
