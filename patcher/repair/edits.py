"""A parsed Python file, exact span edits on it, and git-style diffs of the result.

ast gives line numbers and UTF-8 byte columns; tokenize gives character columns. Both are turned into
absolute character offsets into the original text, so an edit replaces exactly the tokens it means and
every other byte (comments, spacing, line endings) stays as it was.
"""

from __future__ import annotations

import ast
import difflib
import io
import re
import tokenize
from bisect import bisect_left
from dataclasses import dataclass, field
from functools import cached_property


@dataclass(frozen=True)
class Edit:
    start: int
    end: int
    text: str


@dataclass(frozen=True)
class Tok:
    start: int
    end: int
    type: int
    string: str


@dataclass
class Source:
    path: str
    text: str
    tree: ast.Module
    starts: list[int] = field(init=False)

    def __post_init__(self) -> None:
        self.starts = [0] + [m.end() for m in re.finditer("\n", self.text)]

    @classmethod
    def parse(cls, path: str, text: str) -> Source | None:
        try:
            return cls(path, text, ast.parse(text))
        except (SyntaxError, ValueError):
            return None

    @property
    def line_count(self) -> int:
        return len(self.starts) - (self.text.endswith("\n") or not self.text)

    def line(self, lineno: int) -> str:
        end = self.starts[lineno] if lineno < len(self.starts) else len(self.text)
        return self.text[self.starts[lineno - 1] : end]

    def offset(self, lineno: int, col_bytes: int) -> int:
        """Absolute character offset of an ast position (1-based line, UTF-8 byte column)."""
        line = self.line(lineno)
        return self.starts[lineno - 1] + len(line.encode()[:col_bytes].decode(errors="replace"))

    def span(self, node: ast.AST) -> tuple[int, int]:
        n: ast.expr | ast.stmt = node  # type: ignore[assignment]
        assert n.end_lineno is not None and n.end_col_offset is not None
        return self.offset(n.lineno, n.col_offset), self.offset(n.end_lineno, n.end_col_offset)

    def segment(self, node: ast.AST) -> str:
        start, end = self.span(node)
        return self.text[start:end]

    @cached_property
    def tokens(self) -> list[Tok]:
        out: list[Tok] = []
        try:
            for t in tokenize.generate_tokens(io.StringIO(self.text).readline):
                start = self.starts[t.start[0] - 1] + t.start[1] if t.start[0] <= len(self.starts) else len(self.text)
                end = self.starts[t.end[0] - 1] + t.end[1] if t.end[0] <= len(self.starts) else len(self.text)
                out.append(Tok(start, end, t.type, t.string))
        except (tokenize.TokenError, SyntaxError):
            return out
        return out

    @cached_property
    def _token_starts(self) -> list[int]:
        return [t.start for t in self.tokens]

    @cached_property
    def by_type(self) -> dict[type, list[ast.AST]]:
        """Every node of the tree by its class, in `ast.walk` order: one walk of a big file, not one a site."""
        out: dict[type, list[ast.AST]] = {}
        for node in ast.walk(self.tree):
            out.setdefault(type(node), []).append(node)
        return out

    def walk(self, kind: type) -> list:  # type: ignore[type-arg]
        """The tree's nodes of exactly this class (ast's concrete node classes have no subclasses)."""
        return self.by_type.get(kind, [])

    @cached_property
    def by_line(self) -> dict[int, list[ast.AST]]:
        """Every node with a position, by its first line, outer before inner at the same column."""
        out: dict[int, list[ast.AST]] = {}
        for node in ast.walk(self.tree):
            if isinstance(node, ast.expr | ast.stmt | ast.arg | ast.excepthandler):
                out.setdefault(node.lineno, []).append(node)
        for nodes in out.values():
            nodes.sort(key=lambda n: (n.col_offset, -(n.end_lineno or 0), -(n.end_col_offset or 0)))  # type: ignore[attr-defined]
        return out

    def tokens_between(self, start: int, end: int) -> list[Tok]:
        """Significant tokens fully inside [start, end): no parentheses, comments or line breaks."""
        toks = self.tokens
        i = bisect_left(self._token_starts, start)
        skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE}
        out = []
        for t in toks[i:]:
            if t.end > end:
                break
            if t.type not in skip and t.string not in "()":
                out.append(t)
        return out

    def newline(self) -> str:
        return "\r\n" if "\r\n" in self.text else "\n"

    def indent_unit(self) -> str:
        for line in self.text.splitlines():
            stripped = line.lstrip()
            if stripped and line != stripped:
                return line[: len(line) - len(stripped)] if line[0] == "\t" else " " * min(4, len(line) - len(stripped))
        return "    "

    def apply(self, edits: list[Edit]) -> str | None:
        """The text with the edits made, or None if two of them overlap."""
        out, at = [], 0
        for e in sorted(edits, key=lambda e: (e.start, e.end)):
            if e.start < at:
                return None
            out += [self.text[at : e.start], e.text]
            at = e.end
        return "".join([*out, self.text[at:]])


def _lines(text: str) -> list[str]:
    return re.findall(r"[^\n]*\n|[^\n]+$", text)


def git_diff(path: str, old: str, new: str) -> str:
    """A git-style unified diff, one hunk with 3 lines of context, that `git apply` accepts.

    The hunk spans the first to the last changed line (edits are local; files may be big); only that
    span goes through difflib.
    """
    a, b = _lines(old), _lines(new)
    prefix = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    room = min(len(a), len(b)) - prefix
    suffix = next((i for i in range(room) if a[-1 - i] != b[-1 - i]), room)
    a_mid, b_mid = a[prefix : len(a) - suffix], b[prefix : len(b) - suffix]
    before = a[max(0, prefix - _CONTEXT) : prefix]
    after = a[len(a) - suffix : len(a) - suffix + _CONTEXT]
    body = [" " + line for line in before]
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a_mid, b_mid, autojunk=False).get_opcodes():
        if tag == "equal":
            body += [" " + line for line in a_mid[i1:i2]]
        else:
            body += ["-" + line for line in a_mid[i1:i2]] + ["+" + line for line in b_mid[j1:j2]]
    body += [" " + line for line in after]
    start = prefix - len(before)
    n_old, n_new = len(before) + len(a_mid) + len(after), len(before) + len(b_mid) + len(after)
    head = f"@@ -{start + (n_old > 0)},{n_old} +{start + (n_new > 0)},{n_new} @@\n"
    lines = [line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in body]
    return "".join([f"diff --git a/{path} b/{path}\n", f"--- a/{path}\n", f"+++ b/{path}\n", head, *lines])


_CONTEXT = 3
