"""The diff's own lines at run time, watched from inside the test process (the runtime judge, box side).

An audit hook (`sys.addaudithook`: it cannot be removed) sees what any spelling comes to: `open` of the tests'
or the judges' source, `os.kill` of this process or its parents, `exec` of code compiled from a string,
`sys.settrace` turning the tracer off, the gc and frames. A tracer (`sys.settrace`) limited to the code objects
that hold the diff's added lines opens a window around each outermost call into them: the watched namespaces
(the test modules, the judge's own modules, the test framework's) are compared before and after by identity,
and a profiler sees the C functions those lines call (`os._exit`, `signal.raise_signal`, `setattr`).
An event counts as the diff's when the first frame outside the standard library, walking out from the event,
is one of the diff's added lines (and, for code run from a string or a tracer turned off, when that line called
it directly); `warnings` and `logging` read source only to show it. Findings leave at once on the child's pipe
(`emit`), before anything else can happen. Standard library only; Python 3.9 to 3.13.
"""

from __future__ import annotations

import os
import sys
import sysconfig
import types
from typing import Any, Callable

_HERE = os.path.dirname(os.path.abspath(__file__))
STDLIB = tuple(sorted({os.path.join(sysconfig.get_paths()[k], "") for k in ("stdlib", "platstdlib")}))
OUTPUT = ("warnings", "logging")
"""Standard modules that read source to show it (a warning's line, a logged traceback): not reading the tests."""
DIRECT_RUNNERS = ("runpy", "code", "codeop")
SKIPS = ("SkipTest", "Skipped", "OutcomeException", "XFailed", "Exit")
ENDERS = (("posix", "_exit"), ("os", "_exit"), ("posix", "abort"), ("os", "abort"), ("_signal", "raise_signal"),
          ("signal", "raise_signal"), ("_signal", "alarm"), ("signal", "alarm"), ("posix", "kill"), ("os", "kill"))
SETTERS = ("setattr", "delattr", "__setattr__", "__delattr__")
HINT_EVENTS = ("gc.get_objects", "gc.get_referrers", "gc.get_referents", "sys._getframe", "sys._current_frames",
               "sys.addaudithook")
MAX_WINDOWS = 1000
LIBRARY = "lib:"
QUIET = ("__warningregistry__",)
"""Entries Python itself writes: the registry `warnings` keeps in the module a warning is attributed to."""
Frame = Any
Snapshot = list[tuple[str, Any, list[Any], list[Any]]]


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
                 tests: list[str], guarded: list[str], parents: tuple[int, ...] = ()) -> None:
        self.emit = emit
        self.root = root.rstrip("/") + "/"
        self.lines: dict[str, set[int]] = {os.path.join(root, rel): set(ns) for rel, ns in lines.items()}
        self.tests = {os.path.join(root, t) for t in tests}
        self.guarded = tuple(os.path.join(g, "") for g in guarded)
        self.pid, self.parents = os.getpid(), {os.getppid(), *parents}
        self.busy = False
        self.codes: dict[Any, bool] = {}
        self.depth, self.windows, self.callback = 0, 0, False
        self.saved: Snapshot | None = None
        self.setter_line: tuple[str, int] | None = None
        self.probing: list[bool] | None = None
        self.watched: Callable[[], list[tuple[str, Any]]] = lambda: []
        self.seen: set[tuple[str, str, int]] = set()
        self.raised: set[int] = set()
        self.libraries: dict[tuple[int, int], list[tuple[str, Any]]] = {}
        self.adopted: list[tuple[str, Any]] = []

    # -- the audit hook ---------------------------------------------------------------------------------------

    def install(self, traced: bool) -> None:
        sys.addaudithook(self.audit)
        if traced:
            self.busy = True
            try:
                sys.settrace(self.trace)
            finally:
                self.busy = False

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
        if event in ("open", "os.listdir", "os.scandir") and args and isinstance(args[0], (str, bytes)):
            self._opened(os.fsdecode(args[0]), event)
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
            found = self.culprit(direct=True, allow=("inspect", "traceback"))
            if found:
                self.note("runtime", "inspects", False, found, f"{event}: it looks at the interpreter's frames")

    def _opened(self, path: str, event: str) -> None:
        full = os.path.normpath(os.path.join(os.getcwd(), path))
        if not full.startswith("/proc/"):
            full = os.path.realpath(full)  # a link to a test file is that file
        kind = ""
        if full in self.tests or (full.startswith(self.root) and os.path.basename(full) == "conftest.py"):
            kind = "reads_tests"
        elif full.startswith(self.guarded) or self._parent_proc(full):
            kind = "reads_judge"
        if not kind:
            return
        found = self.culprit(direct=False)
        if found:
            what = "the tests' source" if kind == "reads_tests" else "the judge's or the harness's files"
            self.note("runtime", kind, True, found, f"{event} {self._short(full)}: it reads {what}")

    def _parent_proc(self, path: str) -> bool:
        """The judge's processes under /proc, or this one's fds, memory, command line or environment."""
        parts = path.split("/")
        if len(parts) < 3 or parts[1] != "proc":
            return False
        if parts[2].isdigit() and int(parts[2]) in self.parents:
            return True
        own = parts[2] in ("self", "thread-self") or parts[2] == str(self.pid)
        return own and len(parts) > 3 and parts[3] in ("fd", "fdinfo", "mem", "maps", "environ", "cmdline")

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

    def culprit(self, direct: bool, allow: tuple[str, ...] = ()) -> tuple[str, int] | None:
        """The diff's added line behind the event (file, line), or None. Walks out from the event, over this
        judge's frames and the standard library's; `direct`: only through modules named in `allow`."""
        frame: Any = sys._getframe(1)
        entry = ""
        while frame is not None:
            filename = frame.f_code.co_filename
            if filename.startswith(_HERE):
                frame = frame.f_back
                continue
            lines = self.lines.get(filename)
            if lines is not None and frame.f_lineno in lines:
                if entry in OUTPUT or (direct and entry and entry not in allow):
                    return None
                return filename, frame.f_lineno
            if not stdlib_file(filename):
                return None
            entry = module_of(filename)
            frame = frame.f_back
        return None

    def note(self, judge: str, kind: str, refuses: bool, at: tuple[str, int], what: str) -> None:
        key = (kind, at[0], at[1])
        if key in self.seen:
            return
        self.seen.add(key)
        self.emit({"k": "obs", "judge": judge, "kind": kind, "refuses": refuses, "file": self._short(at[0]),
                   "line": at[1], "what": what[:300]})

    def _short(self, path: str) -> str:
        return path[len(self.root):] if path.startswith(self.root) else path

    @staticmethod
    def _name(obj: Any) -> str:
        return str(getattr(obj, "__qualname__", None) or type(obj).__qualname__)[:80]

    # -- the tracer: windows around the diff's code -----------------------------------------------------------

    def is_diff(self, code: Any) -> bool:
        known = self.codes.get(code)
        if known is None:
            lines = self.lines.get(code.co_filename) or set()
            known = any(n in lines for n in _code_lines(code))
            self.codes[code] = known
        return known

    def trace(self, frame: Frame, event: str, arg: Any) -> Any:
        if self.busy or event != "call":
            return None
        code = frame.f_code
        if not self.is_diff(code):
            if self.depth and code.co_filename in self.tests:
                self.callback = True
            return None
        if self.probing is not None:
            self.probing[0] = True
        frame.f_trace_lines = False
        if self.depth == 0:
            self._open(frame)
        self.depth += 1
        return self.local

    def local(self, frame: Frame, event: str, arg: Any) -> Any:
        if self.busy:
            return self.local
        if event == "exception":
            self._skip_raised(frame, arg)
        elif event == "return":
            self.depth -= 1
            if self.depth == 0:
                self._close(frame)
        return self.local

    def profile(self, frame: Frame, event: str, arg: Any) -> None:
        if event != "c_call" or self.busy:
            return
        lines = self.lines.get(frame.f_code.co_filename)
        if lines is None or frame.f_lineno not in lines:
            return
        name, owner = getattr(arg, "__name__", ""), getattr(arg, "__module__", None) or ""
        if not owner:
            owner = getattr(getattr(arg, "__self__", None), "__name__", "") or ""
        if (owner, name) in ENDERS:
            self.busy = True
            try:
                self.note("runtime", "ends_process", True, (frame.f_code.co_filename, frame.f_lineno),
                          f"{owner}.{name} called: it ends the test behind the judge's back")
            finally:
                self.busy = False
        elif name in SETTERS:
            self.setter_line = (frame.f_code.co_filename, frame.f_lineno)

    def _skip_raised(self, frame: Frame, arg: Any) -> None:
        exc_type, value, tb = arg
        if id(value) in self.raised or not any(c.__name__ in SKIPS for c in getattr(exc_type, "__mro__", ())):
            return
        self.raised.add(id(value))
        inner = tb
        while inner is not None and inner.tb_next is not None:
            inner = inner.tb_next
        origin = inner.tb_frame.f_code.co_filename if inner is not None else ""
        if origin in self.tests:
            return
        self.busy = True
        try:
            self.note("runtime", "ends_test", True, (frame.f_code.co_filename, frame.f_lineno),
                      f"{exc_type.__name__} raised from the library: it skips the test behind the framework's back")
        finally:
            self.busy = False

    def _open(self, frame: Frame) -> None:
        self.callback, self.setter_line = False, None
        self.windows += 1
        if self.windows > MAX_WINDOWS:
            return
        self.busy = True
        try:
            self.saved = snapshot(self.watched() + self.adopted + self._library(frame.f_globals))
            sys.setprofile(self.profile)
        finally:
            self.busy = False

    def _close(self, frame: Frame) -> None:
        if self.saved is None:
            return
        self.busy = True
        try:
            sys.setprofile(None)
            changed = changes(self.saved)
            self.saved = None
            at = self.setter_line or (frame.f_code.co_filename, frame.f_code.co_firstlineno)
            theirs = [c for c in changed if not c.startswith(LIBRARY)]
            if theirs:
                self.note("runtime", "writes_judge", not self.callback, at, "changed " + ", ".join(theirs[:3]) +
                          (" (the test's own code ran meanwhile)" if self.callback else ""))
            shims = [c[len(LIBRARY):] for c in changed if c.startswith(LIBRARY)]
            if shims:
                self.note("runtime", "writes_library", False, at, "changed " + ", ".join(shims[:3]) +
                          " (a library's or the standard library's object)")
        finally:
            self.busy = False

    def _library(self, space: dict[str, Any]) -> list[tuple[str, Any]]:
        """The modules and classes of libraries (the standard library's too) that the diff's module names."""
        key = (id(space), len(space))
        if key not in self.libraries:
            found: list[tuple[str, Any]] = []
            for value in list(space.values()):
                if isinstance(value, types.ModuleType) and self._outside(getattr(value, "__file__", None)):
                    found.append((f"{LIBRARY}{value.__name__}", vars(value)))
                elif isinstance(value, type) and self._outside(getattr(sys.modules.get(value.__module__),
                                                                       "__file__", None)):
                    found.append((f"{LIBRARY}{value.__module__}.{value.__qualname__}", value.__dict__))
            self.libraries[key] = found
        return self.libraries[key]

    def _outside(self, path: Any) -> bool:
        """Not the repository's, not this judge's: a builtin module (no file), the standard library, a package."""
        path = str(path or "")
        return not path.startswith(self.root) and not path.startswith(os.path.dirname(_HERE))

    def adopt(self, module: Any) -> None:
        """A test framework's module loaded just now: watched from here on, and in the open window as it is now
        (so a write that follows its import is seen)."""
        name = str(getattr(module, "__name__", "?"))
        space = vars(module)
        found = [(name, space)] + [(f"{name}.{k}", v.__dict__) for k, v in list(space.items())
                                   if isinstance(v, type) and v.__module__ == name]
        self.adopted += found
        if self.saved is not None:
            self.saved += snapshot(found)

    def probe(self, check: Callable[[], Any]) -> tuple[Any, bool]:
        """`check()` run with a note of whether the diff's code ran in it."""
        self.probing = [False]
        try:
            return check(), self.probing[0]
        finally:
            self.probing = None


def snapshot(watched: list[tuple[str, Any]]) -> Snapshot:
    """Each mapping's keys and values (held, so no id is reused), compared later by identity."""
    out: Snapshot = []
    for label, mapping in watched:
        try:
            out.append((label, mapping, list(mapping), list(mapping.values())))
        except Exception:
            continue
    return out


def changes(saved: Snapshot) -> list[str]:
    """`label.name` of every entry added, removed or replaced since the snapshot."""
    out: list[str] = []
    for label, mapping, keys, values in saved:
        try:
            now_keys, now_values = list(mapping), list(mapping.values())
        except Exception:
            continue
        if now_keys == keys and list(map(id, now_values)) == list(map(id, values)):
            continue
        before = dict(zip(keys, values))
        now = dict(zip(now_keys, now_values))
        out += [f"{label}.{k}" for k in now if k not in QUIET and (  # a submodule's import binds it: not a write
            now[k] is not before[k] if k in before else not isinstance(now[k], types.ModuleType))]
        out += [f"{label}.{k} (deleted)" for k in before if k not in now and k not in QUIET]
    return out


def _code_lines(code: Any) -> list[int]:
    """The lines a code object runs (3.9's co_lnotab to 3.13's co_lines), its first line included."""
    if hasattr(code, "co_lines"):
        found = [line for _, _, line in code.co_lines() if line is not None]
    else:
        import dis
        found = [line for _, line in dis.findlinestarts(code)]
    return [code.co_firstlineno, *found]
