"""What a diff really changed: the base tree and the patched tree compared on disk, `.git` aside.

The policy judges these paths, not the names in the diff text: git unquotes C-style names
(`"b/conftest\\056py"`), reads octal modes (`0120000`), renames and copies, and ignores `.gitignore` when
applying; the file system after `git apply` is what every one of those spellings came to.
"""

from __future__ import annotations

import difflib
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

MAX_TEXT_BYTES = 2 * 1024 * 1024


@dataclass
class Change:
    path: str
    kind: str
    """added, modified or deleted."""
    link: bool = False
    """A symbolic link (or anything not a regular file) on either side."""
    mode_changed: bool = False
    binary: bool = False
    added_lines: list[tuple[int, str]] = field(default_factory=list)
    """(line number in the new file, text) of every added line of a text file."""
    new_text: str | None = None
    """The whole new text of a text file (for parsing it)."""
    old_text: str | None = None
    """The whole base text of a modified text file (None for a new file): what the rules compare against."""


def _entries(root: Path) -> dict[str, os.stat_result]:
    out: dict[str, os.stat_result] = {}
    for here, dirs, files in os.walk(root):
        rel = os.path.relpath(here, root)
        if rel == ".":
            dirs[:] = [d for d in dirs if d != ".git"]
        for name in [*files, *(d for d in dirs if os.path.islink(os.path.join(here, d)))]:
            path = name if rel == "." else f"{rel}/{name}"
            out[path] = os.lstat(root / path)
    return out


def _text(path: Path) -> list[str] | None:
    raw = path.read_bytes()[:MAX_TEXT_BYTES] if path.is_file() else b""
    if b"\0" in raw:
        return None
    try:
        return raw.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        return None


def tree_changes(base: Path, patched: Path) -> list[Change]:
    """Every path that differs between the two trees, with the lines the patched side added."""
    old, new = _entries(base), _entries(patched)
    changes = []
    for path in sorted(set(old) | set(new)):
        a, b = old.get(path), new.get(path)
        if a and b and a.st_mode == b.st_mode and _same(base / path, patched / path, a):
            continue
        kind = "added" if a is None else "deleted" if b is None else "modified"
        link = any(s is not None and not stat.S_ISREG(s.st_mode) for s in (a, b))
        change = Change(path, kind, link=link, mode_changed=bool(a and b and a.st_mode != b.st_mode))
        if b is not None and not link:
            before = _text(base / path) if a else []
            after = _text(patched / path)
            change.binary = before is None or after is None
            if not change.binary:
                change.added_lines = _added(before or [], after or [])
                change.new_text = "\n".join(after or [])
                change.old_text = "\n".join(before) if a and before is not None else None
        changes.append(change)
    return changes


def _same(a: Path, b: Path, st: os.stat_result) -> bool:
    if stat.S_ISLNK(st.st_mode):
        return os.readlink(a) == os.readlink(b)
    return not stat.S_ISREG(st.st_mode) or a.read_bytes() == b.read_bytes()


def _added(before: list[str], after: list[str]) -> list[tuple[int, str]]:
    lines = []
    for tag, _, _, j1, j2 in difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes():
        if tag in ("replace", "insert"):
            lines += [(n + 1, after[n]) for n in range(j1, j2)]
    return lines
