"""What counts as reading the tests or the judge (the runtime judge, box side; observe.py reports who did it).

A path is the tests' when it names a test module, a conftest file or a test module's compiled code (under
`__pycache__`), in this tree or in any copy of it the box holds (the other side's, the workspace's): as given,
joined to the working directory, resolved through links (`/proc/self/cwd/...` too), or, relative and naming
nothing there, as the tail of a test's path (a name opened beside a directory's fd: `os.open(name, dir_fd=)`).
It is the judge's when it lies in the judge's folder, or is one of the judge's processes (or this one's fds,
memory, command line or environment) under /proc. A command line (`subprocess`, `os.system`, `os.exec*`,
`os.posix_spawn`) that names such a path, or a pattern matching one, reads it too.
A code object is the tests' when it is a test module's and runs on the stack (the test itself, its fixtures); a
test module's other code (a callback the test hands the code, a test function a decorator is handed) is the
test's to hand: `callback`. A code object of the judge's folder is the judge's.
Standard library only; Python 3.9 to 3.13.
"""

from __future__ import annotations

import os
import sys
from typing import Any

COMMANDS = {"subprocess.Popen": (1, 2), "os.system": (0, None), "os.exec": (1, None), "os.posix_spawn": (1, None),
            "os.spawn": (2, None)}
"""Audit events that start a program: (the index of its argument list or command, of its working directory)."""
PROC_PRIVATE = ("fd", "fdinfo", "mem", "maps", "environ", "cmdline")


class Reads:
    def __init__(self, roots: list[str], tests: list[str], guarded: tuple[str, ...], pid: int,
                 parents: set[int]) -> None:
        """`roots`: the tree and every copy of it the box holds; `tests`: the test modules, relative to a root."""
        self.roots = tuple(os.path.join(r, "") for r in roots if r)
        self.tests = {os.path.normpath(os.path.join(r, t)) for r in self.roots for t in tests}
        self.tails = tuple("/" + os.path.normpath(t) for t in tests)
        self.compiled = {(os.path.join(os.path.dirname(t), "__pycache__"), os.path.basename(t)[:-3] + ".")
                         for t in self.tests if t.endswith(".py")}
        self.guarded, self.pid, self.parents = guarded, pid, parents
        self.known: dict[str, str] = {}

    def path(self, path: Any, cwd: Any = None) -> str:
        """`reads_tests`, `reads_judge` or "" for a path being opened (relative to `cwd`, else the working one)."""
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        if not isinstance(path, str) or not path:
            return ""
        base = os.fsdecode(cwd) if isinstance(cwd, (str, bytes)) and cwd else os.getcwd()
        full = os.path.normpath(os.path.join(base, path))
        key = full + ("\0" + path if not os.path.isabs(path) else "")
        if key not in self.known:
            self.known[key] = self._path(path, full)
        return self.known[key]

    def _path(self, given: str, full: str) -> str:
        if self._proc(full):
            return "reads_judge"
        real = os.path.realpath(full)
        for candidate in (full, real):
            kind = self._file(candidate)
            if kind:
                return kind
        tail = "/" + os.path.normpath(given)
        if not os.path.isabs(given) and not os.path.exists(full) and not given.startswith("..") and \
                any(t.endswith(tail) for t in self.tails):
            return "reads_tests"
        return ""

    def _file(self, full: str) -> str:
        if full in self.tests or (full.startswith(self.roots) and os.path.basename(full) == "conftest.py"):
            return "reads_tests"
        folder, name = os.path.split(full)
        if any(folder == d and name.startswith(stem) and name.endswith(".pyc") for d, stem in self.compiled):
            return "reads_tests"
        if full.startswith(self.guarded):
            return "reads_judge"
        return ""

    def _proc(self, path: str) -> bool:
        """The judge's processes under /proc, or this one's fds, memory, command line or environment."""
        parts = path.split("/")
        if len(parts) < 3 or parts[1] != "proc":
            return False
        if parts[2].isdigit() and int(parts[2]) in self.parents:
            return True
        own = parts[2] in ("self", "thread-self") or parts[2] == str(self.pid)
        return own and len(parts) > 3 and parts[3] in PROC_PRIVATE

    def command(self, event: str, args: tuple[Any, ...]) -> tuple[str, str]:
        """(kind, the path) when a program started by `event` is handed a path of the tests' or the judge's."""
        where, at = COMMANDS[event]
        line = args[where] if len(args) > where else None
        cwd = args[at] if at is not None and len(args) > at else None
        if isinstance(line, (str, bytes)):
            given = [os.fsdecode(line)]
        elif isinstance(line, (list, tuple)):
            given = [os.fsdecode(w) if isinstance(w, (str, bytes)) else str(w) for w in line[:100]]
        else:
            return "", ""
        words = [p for w in given for p in _split(w)]
        for word in (p for w in words[:200] for p in {w, w.partition("=")[2]} if p):
            for path in _expanded(word, cwd):
                kind = self.path(path, cwd)
                if kind:
                    return kind, path
        return "", ""

    def code(self, code: Any) -> str:
        """`tests`, `callback`, `judge` or "" for a code object being read."""
        filename = getattr(code, "co_filename", None)
        if not isinstance(filename, str):
            return ""
        if filename.startswith(self.guarded):
            return "judge"
        if filename not in self.tests and not (filename.startswith(self.roots) and filename.endswith("/conftest.py")):
            return ""
        frame: Any = sys._getframe(1)
        while frame is not None:
            if frame.f_code is code:
                return "tests"
            frame = frame.f_back
        return "callback"


def _split(text: str) -> list[str]:
    """A command line's words (a shell's command, `sh -c '...'`, is split as the shell would)."""
    if not any(c.isspace() for c in text):
        return [text]
    import shlex  # only when a program starts (this module is loaded in every context; the bare one stays bare)

    try:
        return [text, *shlex.split(text)]
    except ValueError:
        return [text, *text.split()]


def _expanded(word: str, cwd: Any) -> list[str]:
    """A word of a command line, and the paths it matches when it is a pattern (`tests/*.py`)."""
    if not any(c in word for c in "*?["):
        return [word]
    import glob

    base = os.fsdecode(cwd) if isinstance(cwd, (str, bytes)) and cwd else os.getcwd()
    try:
        return [word, *glob.glob(os.path.join(base, word))[:50]]
    except (OSError, ValueError):
        return [word]
