"""Read a Python crash report into frames and exceptions (tbmodel.py's; intake/frames.py ties the frames to
repository files). The text is made plain first (tbtext.py); pytest's own parts are read by pytestreport.py.

`parse_traceback` reads CPython tracebacks (chained, exception groups, the SyntaxError layout, 3.11+
carets) and pytest output (`--tb=long|short|native`, summary lines), bare or inside logs.
- Several independent tracebacks (two crashes in a log, several failing tests): the last is primary.
  `chain` is every traceback linked to it ("The above exception…", "During handling…", members of an
  exception group), causes first; `frames`/`exception` are the top-level one that escaped.
- Log prefix: the text before "Traceback (most recent call last):" (or a pytest banner), cut to what the
  next non-blank line shares with it (digits match any digit), is stripped from the lines that follow;
  lines without it (other services, other loggers) are dropped.
- Message: the exception line and what follows it up to a blank line, a log record, a line with another
  log prefix or another traceback structure (at most 20 lines). pytest's `E   assert …` means AssertionError.
- A frame's function is its code's `co_name`, as the harness reports it: printed (`in NAME`; a qualified
  name is cut to its last part), or read from pytest's printed source (intake/framenames.py); "" when
  nothing tells (SyntaxError layout, `--tb=line`), and then `function_printed` is False.
- Local variables printed under a frame's source line (`    name = value`, the layout of
  `traceback.TracebackException(capture_locals=True)`, which crash intake writes) become the frame's `locals`:
  text to read, never evaluated.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from patcher.errors import BadInput
from patcher.intake.framenames import printed_function
from patcher.intake.pytestreport import (
    BANNER,
    CAPTURED,
    E_LINE,
    PROGRESS,
    SECTION,
    SEPARATOR,
    SUMMARY,
    node_id,
    read_e_lines,
    summary_exception,
)
from patcher.intake.tbmodel import ExceptionInfo, Frame, ParsedTraceback
from patcher.intake.tbtext import EXCEPTION_LINE, FILE_LINE, HEADER, MAX_MESSAGE_LINES, NOISE, indent, normalize

NO_TRACEBACK = (
    "no Python traceback found in the input: expected a 'Traceback (most recent call last):' block "
    "or pytest failure output"
)
_CHAIN = re.compile(
    r"(?:The above exception was the direct cause of the following exception|"
    r"During handling of the above exception, another exception occurred):\s*$"
)
_LOCATION = re.compile(r"(?P<file>(?:[A-Za-z]:)?[^\s:=<][^:=]*?\.\w+|<[^>]+>):(?P<line>\d+):(?: (?P<rest>.*))?$")
_UNITTEST = re.compile(r"(?:ERROR|FAIL|UNEXPECTED SUCCESS): (?P<name>\w+) \((?P<where>[A-Za-z_][\w.]*)\)")
_LOG_RECORD = re.compile(r"\[?\d{4}-\d\d-\d\d|\d\d:\d\d:\d\d|(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)\b")
_QUALIFIED = re.compile(r"[\w.<>]+\.(?P<name><?\w+>?)")
_LOCAL = re.compile(r"\s+(?P<name>[A-Za-z_]\w*) = (?P<value>.*\S)\s*$")
MAX_LOCALS = 50


def parse_traceback(text: str) -> ParsedTraceback:
    parser = _Parser()
    for line, depth, prefix in normalize(text):
        parser.feed(line, depth, prefix)
    return parser.result()


@dataclass
class _Tb:
    depth: int = 0
    cpython: bool = False
    frames: list[Frame] = field(default_factory=list)
    exc_type: str | None = None
    message: list[str] = field(default_factory=list)
    e_lines: list[str] = field(default_factory=list)
    location_type: str | None = None

    def empty(self) -> bool:
        return not (self.frames or self.exc_type or self.e_lines)

    def finish(self) -> tuple[list[Frame], ExceptionInfo | None, int] | None:
        exc = ExceptionInfo(self.exc_type, "\n".join(self.message).strip()) if self.exc_type else None
        if self.e_lines:
            frames, exc = read_e_lines(self.e_lines, self.location_type)
            self.frames += frames
        elif self.location_type and not exc:
            exc = ExceptionInfo(self.location_type, "")
        return (self.frames, exc, self.depth) if self.frames or exc else None


class _Parser:
    def __init__(self) -> None:
        self.done: list[tuple[int, list[Frame], ExceptionInfo | None, int]] = []  # section, frames, exc, depth
        self.names: dict[int, str] = {}  # pytest section titles
        self.section = 0
        self.tb: _Tb | None = None
        self.pending: list[str] = []  # pytest --tb=long lines since the last frame
        self.source_for: int | None = None  # indentation of a frame line whose source comes next
        self.locals_for: int | None = None  # indentation of the frame line whose variables may follow
        self.in_message = self.in_pytest = self.skipping = self.pytest_seen = False
        self.failing: list[str] = []
        self.summary_exc: ExceptionInfo | None = None
        self.message_prefix = ""  # a message continues only on lines with its exact log prefix

    def feed(self, line: str, depth: int, prefix: str) -> None:
        if m := SECTION.match(line):
            self._finish(_Tb(), new_section=True)
            self.names[self.section] = m["name"]
            self.in_pytest = self.pytest_seen = True
            self.skipping = False
        elif m := BANNER.match(line):
            self._finish(None, new_section=True)
            self.in_pytest = m["title"] in ("FAILURES", "ERRORS")
            self.pytest_seen |= self.in_pytest
            self.skipping = False
        elif CAPTURED.match(line):
            self.skipping = True  # captured output may hold tracebacks that are not the failure
        elif not self.skipping and not self._structure(line, depth):
            self._content(line, prefix)
            return
        self.in_message, self.source_for, self.locals_for = False, None, None

    def _structure(self, line: str, depth: int) -> bool:
        if SEPARATOR.match(line):
            self.pending = []
        elif m := SUMMARY.match(line) or PROGRESS.match(line):
            self.pytest_seen = True
            if m["node"] not in self.failing:
                self.failing.append(m["node"])
            msg = m.groupdict().get("msg")
            self.summary_exc = (msg and summary_exception(msg)) or self.summary_exc
        elif (m := _UNITTEST.match(line)) and not m["where"].startswith("unittest."):
            where = m["where"]  # `mod.Case.test_x` since Python 3.11; `mod.Case` before
            test = where if where.endswith("." + m["name"]) else f"{where}.{m['name']}"
            self.failing += [test] if test not in self.failing else []
        elif HEADER.match(line):
            if self.tb is None or not self.tb.empty():
                self._finish(_Tb(), new_section=self.tb is None or depth == 0)
            assert self.tb is not None
            self.tb.cpython, self.tb.depth = True, depth
        elif _CHAIN.match(line):
            self._finish(_Tb(), new_section=self.tb is None)
        else:
            return False
        return True

    def _content(self, line: str, prefix: str) -> None:
        if self.in_message and self.tb:
            same_record = prefix == self.message_prefix and not _LOG_RECORD.match(line)
            if line.strip() and same_record and len(self.tb.message) < MAX_MESSAGE_LINES:
                self.tb.message.append(line)
                return
            self.in_message = False
        if self.source_for is not None:
            expected, self.source_for = self.source_for, None
            if line.strip() and indent(line) > expected and not NOISE.match(line):
                source = line.strip()
                frames = self._tb().frames
                frames[-1] = replace(frames[-1], source=None if source == "???" else source)
                self.locals_for = expected
                return
        if not line.strip() or NOISE.match(line):
            return
        if self.locals_for is not None and (m := _LOCAL.match(line)) and indent(line) > self.locals_for:
            frames = self._tb().frames
            if len(frames[-1].locals) < MAX_LOCALS:
                frames[-1] = replace(frames[-1], locals=(*frames[-1].locals, (m["name"], m["value"])))
            return
        self.locals_for = None
        if m := FILE_LINE.match(line):
            if self.tb is None or self.tb.exc_type or self.tb.e_lines:
                self._finish(_Tb(), new_section=True)
            func = m["func"] or ""
            self._add_frame(m["file"], m["line"], q["name"] if (q := _QUALIFIED.fullmatch(func)) else func, None,
                            wait=indent(line), printed=bool(func))
            self._tb().cpython = True
        elif (m := E_LINE.match(line)) and self._pytest_context():
            if self.tb and self.tb.location_type:  # --tb=line: the last failure's location closed it
                self._finish(_Tb(), new_section=True)
            self._tb().e_lines.append(m["text"] or "")
        elif (m := _LOCATION.match(line)) and (self._pytest_context() or (m["rest"] or "").startswith("in ")):
            self._location(m["file"], m["line"], m["rest"] or "")
        elif self.tb and self.tb.cpython and self.tb.exc_type is None and (m := EXCEPTION_LINE.match(line)):
            self.tb.exc_type, self.tb.message, self.in_message = m["type"], [m["msg"] or ""], True
            self.message_prefix = prefix
        else:
            self.pending.append(line)

    def _location(self, file: str, line: str, rest: str) -> None:
        """`path.py:12: in func` (--tb=short) or `path.py:12: [ExcType]` closing a --tb=long entry."""
        self.pytest_seen = True
        if rest.startswith("in "):
            self._add_frame(file, line, rest[3:].strip(), None, wait=0)
        else:
            at = next((i for i, p in enumerate(self.pending) if p.startswith(">")), None)
            source = self.pending[at][1:].strip() if at is not None else "???"
            function = printed_function(self.pending, at) if at is not None else ""
            self._add_frame(file, line, function, None if source == "???" else source, None, printed=False)
            if rest.strip():
                self._tb().location_type = rest.split(":")[0].strip()
        self.pending = []

    def _pytest_context(self) -> bool:
        pytest_frames = self.tb is not None and bool(self.tb.frames) and not self.tb.cpython
        return self.in_pytest or pytest_frames or any(p.startswith(">") for p in self.pending)

    def _tb(self) -> _Tb:
        if self.tb is None:
            self._finish(_Tb(), new_section=True)
        assert self.tb is not None
        return self.tb

    def _add_frame(self, file: str, line: str, func: str, source: str | None, wait: int | None,
                   printed: bool = True) -> None:
        frame = Frame(file=file, line=int(line), function=func, source=source, function_printed=printed)
        self._tb().frames.append(frame)
        self.source_for = wait

    def _finish(self, then: _Tb | None, new_section: bool) -> None:
        if self.tb and (done := self.tb.finish()):
            self.done.append((self.section, *done))
        self.section += new_section
        self.tb, self.pending = then, []

    def result(self) -> ParsedTraceback:
        self._finish(None, new_section=True)
        sections = {s: [d[1:] for d in self.done if d[0] == s] for s, *_ in self.done}
        derived = [n for s, tbs in sections.items() if (n := node_id(self.names.get(s), tbs))]
        failing = self.failing or derived
        if not sections and not failing:
            raise BadInput(NO_TRACEBACK)
        tbs = sections[self.done[-1][0]] if self.done else []
        frames, exc, _ = next((tb for tb in reversed(tbs) if tb[2] == 0), tbs[-1]) if tbs else ([], None, 0)
        return ParsedTraceback(
            frames=frames,
            exception=exc or self.summary_exc,
            chain=[(frames, exc) for frames, exc, _ in tbs],
            failing_tests=failing,
            kind="pytest" if self.pytest_seen else "cpython",
        )
