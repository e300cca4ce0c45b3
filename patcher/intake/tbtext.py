"""A crash report's text made plain before parsing: ANSI codes, log prefixes (the text before a
traceback's header that the next lines share) and exception-group decoration (`|`, `+-`) come off.
Also the CPython lines both readers match (traceback.py; pytestreport.py in a pytest `E` block): the
header, a frame's `File "…", line N, in f`, the exception line, and the caret and repeat noise between them."""

from __future__ import annotations

import re
from collections.abc import Sequence
from itertools import islice

HEADER = re.compile(r"(?:Exception Group )?Traceback \(most recent call last\):\s*$")
FILE_LINE = re.compile(r'\s*File "(?P<file>[^"]+)", line (?P<line>\d+)(?:, in (?P<func>.*\S))?\s*$')
NOISE = re.compile(r"\s*(?:[~^]+|\.\.\.<\d+ lines?>\.\.\.|\[Previous line repeated \d+ more times?\])\s*$")
EXCEPTION_LINE = re.compile(r"(?P<type>[A-Za-z_]\w*(?:\.(?:<locals>|[A-Za-z_]\w*))*)(?::(?: (?P<msg>.*))?)?\s*$")
MAX_MESSAGE_LINES = 20  # of an exception's message, in a CPython traceback or a pytest `E` block
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_ANCHOR = re.compile(HEADER.pattern + r"|(?<!=)={3,} (?:FAILURES|ERRORS|short test summary info) ={3,}\s*$")
_GROUP = re.compile(r"\s*([|+])(?: |$)")
_GROUP_RULE = re.compile(r"[\s|]*\+[-+]+(?: .*)?$")


def common_length(a: Sequence[object], b: Sequence[object]) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def normalize(text: str) -> list[tuple[str, int, str]]:
    """(line, exception-group depth, log prefix removed from it) for each input line kept."""
    lines = _strip_log_prefixes(re.split(r"\r?\n|\r", _ANSI.sub("", text)))
    group = any("Exception Group Traceback" in line for line, _ in lines)
    return [(*(_strip_group(line) if group else (line, 0)), prefix) for line, prefix in lines]


def _strip_log_prefixes(lines: list[str]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    prefix = ""
    for i, line in enumerate(lines):
        if anchor := _ANCHOR.search(line):
            kept = prefix if _shape(line[: len(prefix)]) == _shape(prefix) else ""
            extra = line[len(kept) : anchor.start()]
            group_decoration = not extra.strip(" |+") and bool(set(extra) & {"|", "+"})
            if len(kept) < len(prefix) or (extra and not group_decoration):
                raw = _shape(line[: anchor.start()])
                following = next((_shape(n) for n in islice(lines, i + 1, None) if n.strip()), raw)
                prefix = line[: common_length(raw, following)]
        if not prefix or _shape(line[: len(prefix)]) == _shape(prefix):
            out.append((line[len(prefix) :], line[: len(prefix)]))
        elif not line.strip() or _shape(line.rstrip()) == _shape(prefix.rstrip()):
            out.append(("", ""))
        elif prefix.isspace():
            out.append((line[min(len(prefix), indent(line)) :], ""))
    return out


def _shape(text: str) -> str:
    return re.sub(r"\d", "0", text)


def _strip_group(line: str) -> tuple[str, int]:
    """Exception-group decoration off a line, and how deep in the group it sits (count of `|`)."""
    if _GROUP_RULE.match(line):
        return "", 0
    depth = 0
    while m := _GROUP.match(line):
        depth, line = depth + (m.group(1) == "|"), line[m.end() :]
    return line, depth
