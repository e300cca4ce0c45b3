"""pytest's own parts of a failure report, for traceback.py's parser: the lines that frame the tracebacks
(a test's section title `___ test_x ___`, the `=== FAILURES ===` banners, captured-output headers, the
`_ _ _` separators between the entries of one test, the summary and progress lines that name failing
tests) and what is read from them: the `E` block that ends an entry, a summary line's exception, the node id
a section title names.

Apart from traceback.py, which decides where each traceback starts and ends, because these are pytest's
layout alone; the frames and exceptions they build are tbmodel.py's.
"""

from __future__ import annotations

import re

from patcher.intake.tbmodel import ExceptionInfo, Frame
from patcher.intake.tbtext import EXCEPTION_LINE, FILE_LINE, MAX_MESSAGE_LINES, NOISE, indent

SECTION = re.compile(r"_{3,} (?P<name>.+?) _{3,}\s*$")
BANNER = re.compile(r"={3,} ?(?P<title>[^=]*?) ?={3,}\s*$")
CAPTURED = re.compile(r"-{3,} Captured .* -{3,}\s*$")
SEPARATOR = re.compile(r"(?:_ )+_?\s*$")
E_LINE = re.compile(r"E(?: (?P<text>.*))?$")
SUMMARY = re.compile(r"(?:SUB)?(?:FAILED|ERROR)(?:\(.*\))? "  # pytest 9 subtests: SUBFAILED(params) node
                     r"(?P<node>[^\s:]+\.py(?:::[^\s:\[]+)*(?:\[[^\]]*\])?)(?: - (?P<msg>.*))?\s*$")
PROGRESS = re.compile(r"(?P<node>\S+?\.py::\S+) (?:FAILED|ERROR)\b")


def read_e_lines(lines: list[str], location_type: str | None) -> tuple[list[Frame], ExceptionInfo | None]:
    """pytest's `E` block: maybe a CPython tail (SyntaxError frames), then the exception and its message."""
    cut = min((indent(line) for line in lines if line.strip()), default=0)
    text, frames, i = [line[cut:] for line in lines], [], 0
    while i < len(text):
        if m := FILE_LINE.match(text[i]):
            after = text[i + 1] if i + 1 < len(text) else ""
            has_source = bool(after.strip()) and indent(after) > indent(text[i]) and not NOISE.match(after)
            frames.append(Frame(m["file"], int(m["line"]), m["func"] or "", after.strip() if has_source else None))
            i += 1 + has_source
        elif not text[i].strip() or NOISE.match(text[i]):
            i += 1
        else:
            break
    head, rest = (text[i], text[i + 1 : i + MAX_MESSAGE_LINES]) if i < len(text) else ("", [])
    if (m := EXCEPTION_LINE.match(head)) and head != "assert":
        return frames, ExceptionInfo(m["type"], "\n".join([m["msg"] or "", *rest]).strip())
    exc_type = location_type or ("AssertionError" if head.startswith("assert ") else None)
    return frames, ExceptionInfo(exc_type, "\n".join([head, *rest]).strip()) if exc_type else None


def summary_exception(msg: str) -> ExceptionInfo | None:
    if msg.startswith("assert "):
        return ExceptionInfo("AssertionError", msg)
    return ExceptionInfo(m["type"], m["msg"] or "") if (m := EXCEPTION_LINE.match(msg)) else None


def node_id(name: str | None, tbs: list[tuple[list[Frame], ExceptionInfo | None, int]]) -> str | None:
    """`tests/t.py::TestK::test_y[p]` from a pytest section title `TestK.test_y[p]` and its frames."""
    base, bracket, param = (name or " ").partition("[")
    parts = base.split(".")
    if " " in base or not all(parts):
        return None
    for frames, _, _ in tbs:
        for f in frames:
            if f.function == parts[-1] and not re.match(r"[/\\<]|[A-Za-z]:", f.file):
                path = f.file.replace("\\", "/")
                return f"{path}::{'::'.join(parts)}{bracket}{param}"
    return None
