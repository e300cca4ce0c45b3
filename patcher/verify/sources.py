"""The diff's changed Python source files, read as Python reads them (the construct rules and hints judge these)."""

from __future__ import annotations

import ast

from patcher.verify.policy import is_config_path, is_test_path
from patcher.verify.treediff import Change


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
