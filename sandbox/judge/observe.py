"""The diff's own lines at run time, watched from inside the test process (the runtime judge, box side).

An audit hook (`sys.addaudithook`: it cannot be removed) sees what any spelling comes to: `open` of the tests'
or the judges' source and a program started on it (reads.py says which paths are theirs), `os.kill` of this
process or its parents, `exec` of code compiled from a string, `sys.settrace` turning the tracer off, the gc, the
frames reached (`sys._getframe`, a traceback's, a generator's or a coroutine's frame) and the code objects read
(`f_code`, `__code__`, `gi_code`, `cr_code`, `gc.get_referents`: the running test's refuse, the judge's too);
tracer.py watches the writes and the C calls of the code objects that hold the diff's added lines (`is_diff`),
and the reads no event shows (`linecache`'s cache). An event counts as the diff's when the first frame outside
the standard library, walking out from the event, is one of the diff's added lines (and, for code run from a
string or a tracer turned off, when that line called it directly); a read of the tests' or the judge's files or
code walks out through any library and the repository's other code too, to the nearest added line (the test's
own code on the way makes it the test's), and through the thread a line started. `warnings` shows source and
`logging` formats it: a read on their way to show a warning or log a record is not the diff's. An event the
judge's own code raises is not the diff's either. Findings leave at once on the child's pipe (`emit`), before
anything else can happen. Standard library only; Python 3.9 to 3.13 (3.9 and 3.10 raise no event for a frame's
code or a traceback's, generator's or coroutine's frame: there only a function's `__code__` is seen).
"""

from __future__ import annotations

import os
import sys
import sysconfig
import types
from collections.abc import Callable
from typing import Any

_HERE = os.path.dirname(os.path.abspath(__file__))
STDLIB = tuple(sorted({os.path.join(sysconfig.get_paths()[k], "") for k in ("stdlib", "platstdlib")}))
OUTPUT = ("warnings", "logging")
"""Standard modules that read source to show it (a warning's line, a logged traceback): not reading the tests."""
SHOWS = {("warnings", "_showwarnmsg"), ("warnings", "_showwarnmsg_impl"), ("warnings", "warn_explicit"),
         ("warnings", "warn")}
"""Where `warnings` shows a warning (its `formatwarning` called directly reads any line it is given)."""
DIRECT_RUNNERS = ("runpy", "code", "codeop")
HINT_EVENTS = ("gc.get_objects", "gc.get_referrers", "gc.get_referents", "sys._getframe", "sys._current_frames",
               "sys._getframemodulename", "sys.addaudithook")
FRAMES = ("tb_frame", "gi_frame", "cr_frame", "ag_frame")
CODES = ("f_code", "__code__", "gi_code", "cr_code", "ag_code")
HOOKS = tuple(os.path.join(_HERE, f) for f in ("observe.py", "reads.py", "tracer.py"))
"""This judge's watching code: walking out from an event, its frames come first."""


def stdlib_file(filename: str) -> bool:
    if filename.startswith("<frozen "):
        return True
    return filename.startswith(STDLIB) and "-packages" not in filename


def module_of(filename: str) -> str:
    """`logging` for .../logging/__init__.py, `warnings` for .../warnings.py."""
    rest = filename
    for prefix in STDLIB:
        if filename.startswith(prefix):
            rest = filename[len(prefix):]
    return rest.split("/", 1)[0].split(".", 1)[0]


class Observer:
    """One test process's watcher; `emit(dict)` writes an observation record (the case id is added there)."""

    def __init__(self, emit: Callable[[dict[str, Any]], None], root: str, lines: dict[str, list[int]],
                 tests: list[str], guarded: list[str], parents: tuple[int, ...] = (), reads: Any = None,
                 copies: tuple[str, ...] = ()) -> None:
        """`reads`: reads.py (loaded as the judge loads its parts); `copies`: other copies of the tree the box
        holds (the other side's, the workspace's), whose tests are the tests too."""
        self.emit = emit
        self.root = root.rstrip("/") + "/"
        self.lines: dict[str, set[int]] = {os.path.join(root, rel): set(ns) for rel, ns in lines.items()}
        self.guarded = tuple(os.path.join(g, "") for g in guarded)
        self.pid, self.parents = os.getpid(), {os.getppid(), *parents}
        self.reads = reads.Reads([root, *copies], tests, self.guarded, self.pid, self.parents)
        self.reads_commands = reads.COMMANDS
        self.tests = self.reads.tests
        self.busy = False
        self.codes: dict[Any, bool] = {}
        self.seen: set[tuple[str, str, int]] = set()
        self.threads: dict[int, tuple[Any, tuple[str, int]]] = {}
        """Threads an added line started (by id: the thread, the line): their reads are that line's."""

    # -- the audit hook ---------------------------------------------------------------------------------------

    def install(self) -> None:
        sys.addaudithook(self.audit)

    def audit(self, event: str, args: tuple[Any, ...]) -> None:
        if self.busy or os.getpid() != self.pid:
            return
        self.busy = True
        try:
            self._audit(event, args)
        except Exception:  # an observer that fails must not change the test's outcome
            pass
        finally:
            self.busy = False

    def _audit(self, event: str, args: tuple[Any, ...]) -> None:
        if event in ("open", "os.listdir", "os.scandir", "os.link") and args and isinstance(args[0], (str, bytes)):
            self._opened(args[0], event)
        elif event == "object.__getattr__" and len(args) >= 2 and args[1] in FRAMES + CODES:
            self._attribute(args[0], str(args[1]))
        elif event in self.reads_commands:
            self._started(event, args)
        elif event == "gc.get_referents" and args:
            for obj in list(args[0])[:50] if isinstance(args[0], tuple) else []:
                code = obj if isinstance(obj, types.CodeType) else getattr(obj, "f_code", None) or \
                    getattr(obj, "__code__", None)
                self._code_read(code, "gc.get_referents")
            self._hint(event)
        elif event in ("os.kill", "os.killpg", "signal.pthread_kill") and len(args) >= 2:
            self._signalled(event, args)
        elif event in ("exec", "function.__new__", "code.__new__"):
            self._ran_built(event, args)
        elif event in ("sys.settrace", "sys.setprofile"):
            found = self.culprit(direct=False)
            if found:
                self.note("runtime", "silences_judge", True, found, f"{event}: it turns off the judge's tracer")
        elif event == "object.__setattr__" and len(args) >= 2 and args[1] in ("__code__", "__class__", "__bases__"):
            self._set_special(args)
        elif event in HINT_EVENTS:
            self._hint(event)

    def _hint(self, event: str) -> None:
        found = self.culprit(direct=True, allow=("inspect", "traceback"))
        if found:
            self.note("runtime", "inspects", False, found, f"{event}: it looks at the interpreter's frames")

    def _opened(self, path: Any, event: str, how: str = "") -> None:
        kind = self.reads.path(path)
        if kind:
            self.read(kind, f"{how or event} {self._short(os.path.normpath(os.fsdecode(path)))}")

    def read(self, kind: str, what: str) -> None:
        """A read of the tests' or the judge's files: the nearest added line behind it refuses."""
        found = self.culprit(direct=False, through=True)
        if found:
            whose = "the tests' source" if kind == "reads_tests" else "the judge's or the harness's files"
            self.note("runtime", kind, True, found, f"{what}: it reads {whose}")

    def _started(self, event: str, args: tuple[Any, ...]) -> None:
        kind, path = self.reads.command(event, args)
        if kind:
            self.read(kind, f"{event} with {self._short(path)}")

    def _attribute(self, obj: Any, name: str) -> None:
        if name in FRAMES:
            found = self.culprit(direct=True, allow=("inspect", "traceback"))
            if found:
                self.note("runtime", "inspects", False, found,
                          f"{type(obj).__name__}.{name}: it reaches a frame of the interpreter")
            return
        self._code_read(getattr(obj, name, None), f"{type(obj).__name__}.{name}")

    def _code_read(self, code: Any, how: str) -> None:
        """A code object read: the running test's or the judge's refuses, a callback's the test handed is a hint."""
        whose = self.reads.code(code) if code is not None else ""
        if not whose:
            return
        found = self.culprit(direct=False, through=True)
        if not found:
            return
        name = str(getattr(code, "co_name", "?"))[:60]
        if whose == "tests":
            self.note("runtime", "reads_tests", True, found, f"{how}: it reads the code of the test ({name})")
        elif whose == "judge":
            self.note("runtime", "reads_judge", True, found, f"{how}: it reads the code of the judge's frames ({name})")
        else:
            self.note("runtime", "inspects", False, found, f"{how}: it reads the code of a function the test "
                      f"handed it ({name})")

    def _signalled(self, event: str, args: tuple[Any, ...]) -> None:
        pid, sig = args[0], args[1]
        if not isinstance(pid, int) or sig == 0:
            return
        me = pid in (0, self.pid, -self.pid, -os.getpgid(0)) or (event == "signal.pthread_kill")
        if not (me or pid in self.parents or -pid in self.parents):
            return
        found = self.culprit(direct=False)
        if found:
            whom = "this process" if me else "the judge's process"
            self.note("runtime", "ends_process", True, found, f"{event} signal {sig} to {whom}")

    def _ran_built(self, event: str, args: tuple[Any, ...]) -> None:
        code = args[0] if args else None
        filename = getattr(code, "co_filename", "")
        if event == "exec" and isinstance(filename, str) and os.path.isfile(filename):
            return  # a module or a file's own code (imports run through here too)
        found = self.culprit(direct=True, allow=DIRECT_RUNNERS)
        if found:
            self.note("runtime", "built_code", True, found, f"{event}: it runs code built at run time ({filename})")

    def _set_special(self, args: tuple[Any, ...]) -> None:
        target, name = args[0], str(args[1])
        if isinstance(target, types.ModuleType):
            return  # a lazily loaded module becoming a module (importlib.util.LazyLoader)
        code = getattr(target, "__code__", None)
        where = getattr(code, "co_filename", "") or getattr(type(target), "__module__", "")
        found = self.culprit(direct=False)
        if not found:
            return
        if isinstance(where, str) and (where in self.tests or where.startswith(self.guarded)):
            self.note("runtime", "writes_judge", True, found, f"{name} of {self._name(target)} replaced: "
                      "a test's or the judge's own object")
        else:
            self.note("runtime", "writes_library", False, found, f"{name} of {self._name(target)} replaced")

    # -- who did it -------------------------------------------------------------------------------------------

    def culprit(self, direct: bool, allow: tuple[str, ...] = (), through: bool = False) -> tuple[str, int] | None:
        """The diff's added line behind the event (file, line), or None. Walks out from the event, over this
        judge's frames and the standard library's; `direct`: only through modules named in `allow`; `through`:
        through any code but the tests' (a read), and on from a thread to the line that started it."""
        frame: Any = sys._getframe(1)
        while frame is not None and frame.f_code.co_filename in HOOKS:
            frame = frame.f_back
        if frame is not None and frame.f_code.co_filename.startswith(_HERE):
            return None  # the judge's own doing (a test's record, a failure's frames)
        entry, shown = "", False
        while frame is not None:
            filename = frame.f_code.co_filename
            if filename.startswith(_HERE):
                frame = frame.f_back
                continue
            lines = self.lines.get(filename)
            if lines is not None and frame.f_lineno in lines:
                if (entry in OUTPUT and not through) or shown or (direct and entry and entry not in allow):
                    return None
                return filename, frame.f_lineno
            if through and filename in self.tests:
                return None
            if stdlib_file(filename):
                entry = module_of(filename)
                shown = shown or entry == "logging" or (entry, frame.f_code.co_name) in SHOWS
            elif not through:
                return None
            frame = frame.f_back
        return self._thread_origin() if through else None

    def _thread_origin(self) -> tuple[str, int] | None:
        threading = sys.modules.get("threading")
        if threading is None:
            return None
        started = self.threads.get(id(threading.current_thread()))
        return started[1] if started is not None and started[0] is threading.current_thread() else None

    def note(self, judge: str, kind: str, refuses: bool, at: tuple[str, int], what: str) -> None:
        """One observation out on the pipe at once (once per kind and line), the observer deaf meanwhile."""
        key = (kind, at[0], at[1])
        if key in self.seen or os.getpid() != self.pid:  # a process the test forked runs our hooks too: not its say
            return
        self.seen.add(key)
        busy, self.busy = self.busy, True
        try:
            self.emit({"k": "obs", "judge": judge, "kind": kind, "refuses": refuses, "file": self._short(at[0]),
                       "line": at[1], "what": what[:300]})
        finally:
            self.busy = busy

    def _short(self, path: str) -> str:
        return path[len(self.root):] if path.startswith(self.root) else path

    @staticmethod
    def _name(obj: Any) -> str:
        return str(getattr(obj, "__qualname__", None) or type(obj).__qualname__)[:80]

    def is_diff(self, code: Any) -> bool:
        known = self.codes.get(code)
        if known is None:
            lines = self.lines.get(code.co_filename) or set()
            known = any(n in lines for n in _code_lines(code))
            self.codes[code] = known
        return known

def _code_lines(code: Any) -> list[int]:
    """The lines a code object runs (3.9's co_lnotab to 3.13's co_lines), its first line included."""
    if hasattr(code, "co_lines"):
        found = [line for _, _, line in code.co_lines() if line is not None]
    else:
        import dis
        found = [line for _, line in dis.findlinestarts(code)]
    return [code.co_firstlineno, *found]
