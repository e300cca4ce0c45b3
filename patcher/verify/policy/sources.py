"""The diff's changed Python source files, read as Python reads them (the construct hints judge these), and the
two policy rules on their text: each must parse, and Python must read the text the diff shows."""

from __future__ import annotations

import ast
import codecs
import re

from patcher.verify.policy.rules import is_config_path, is_test_path
from patcher.verify.policy.treediff import Change

_COOKIE = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")
_PLAIN_CODECS = frozenset({"utf-8", "ascii", "latin-1", "iso8859-1", "cp1252"})


def source_files(changes: list[Change]) -> list[Change]:
    """The Python source files of the diff's source part (not new tests, not config)."""
    return [c for c in changes if c.kind != "deleted" and c.path.endswith((".py", ".pyw")) and c.new_text is not None
            and not is_config_path(c.path) and not is_test_path(c.path)]


def parse(text: str | None) -> ast.Module | None:
    try:
        return ast.parse((text or "").encode("utf-8"))
    except (SyntaxError, ValueError, UnicodeDecodeError):
        return None


def unparsable(changes: list[Change]) -> list[str]:
    """Policy violations: source files the diff leaves unparsable (the rules could not read them)."""
    return [f"{c.path}: the file does not parse as Python with the diff; a fix must be valid Python"
            for c in source_files(changes) if parse(c.new_text) is None
            and (c.old_text is None or parse(c.old_text) is not None)]


def hidden_text(changes: list[Change]) -> list[str]:
    """Policy violations: a source encoding declared on the diff's lines under which Python reads other text than
    the diff shows (`# coding: utf-7` makes `+AGk-mport sys` an import): what runs must be what a reviewer reads."""
    out = []
    for c in source_files(changes):
        added = {n for n, _ in c.added_lines}
        for n, raw in enumerate((c.new_text or "").splitlines()[:2], 1):
            m = _COOKIE.match(raw.encode())
            if m and n in added and _codec(m.group(1).decode()) not in _PLAIN_CODECS:
                out.append(f"{c.path}:{n}: declares the source encoding {m.group(1).decode()!r}, under which Python "
                           "reads other text than the diff shows")
    return out


def _codec(name: str) -> str:
    try:
        return codecs.lookup(name).name
    except LookupError:
        return name
