"""The tracer of the runtime judge (observe.py says what it watches and who counts as the diff).

`sys.settrace` opens a window around each outermost call into a code object that holds the diff's added lines:
the watched namespaces (the test modules, the judge's own modules, the test framework's; the libraries the
diff's module names, as hints) are snapshotted at its start and compared by identity at its end, and a
profiler (`sys.setprofile`, only inside windows) sees the C functions those lines call (`os._exit`,
`signal.raise_signal`, `setattr`). A skip exception raised through the diff's frames from library code ends
the test behind the framework's back. The tracer also sees the calls no audit event shows: `linecache` serving
the tests' or the judge's lines from its cache (`getlines`, under `getline`, `inspect.getsource` and the stack's
lines), and a thread started (`Thread.start`, the line behind it noted for the thread's reads); and it keeps those
files out of that cache at the start of each window and after each fill, so no cached line is read unseen.
Standard library only; Python 3.9 to 3.13 (sys.monitoring, 3.12+, could narrow the events to the diff's code
objects; settrace is what every version has).
"""

from __future__ import annotations

import linecache
import os
import sys
import types
from collections.abc import Callable
from typing import Any

_HERE = os.path.dirname(os.path.abspath(__file__))
SKIPS = ("SkipTest", "Skipped", "OutcomeException", "XFailed", "Exit")
ENDERS = (("posix", "_exit"), ("os", "_exit"), ("posix", "abort"), ("os", "abort"), ("_signal", "raise_signal"),
          ("signal", "raise_signal"), ("_signal", "alarm"), ("signal", "alarm"), ("posix", "kill"), ("os", "kill"))
SETTERS = ("setattr", "delattr", "__setattr__", "__delattr__")
MAX_WINDOWS = 1000
LIBRARY = "lib:"
QUIET = ("__warningregistry__",)
"""Entries Python itself writes: the registry `warnings` keeps in the module a warning is attributed to."""
Frame = Any
Snapshot = list[tuple[str, Any, list[Any], list[Any]]]


class Tracer:
    def __init__(self, observer: Any) -> None:
        self.o = observer
        self.depth, self.windows, self.callback = 0, 0, False
        self.saved: Snapshot | None = None
        self.setter_line: tuple[str, int] | None = None
        self.probing: list[bool] | None = None
        self.watched: Callable[[], list[tuple[str, Any]]] = lambda: []
        self.raised: set[int] = set()
        self.libraries: dict[tuple[int, int], list[tuple[str, Any]]] = {}
        self.adopted: list[tuple[str, Any]] = []
        import threading  # here, in the watched run only (as in pytest's, where it is loaded): the bare run stays bare

        self.calls: dict[Any, Callable[[Frame], Any]] = {
            linecache.getlines.__code__: self._getlines, linecache.updatecache.__code__: self._filled,
            threading.Thread.start.__code__: self._started}
        """Calls of the standard library watched by their code: what they are handed is looked at."""

    def install(self) -> None:
        self.o.busy = True
        try:
            sys.settrace(self.trace)
        finally:
            self.o.busy = False

    def trace(self, frame: Frame, event: str, arg: Any) -> Any:
        if self.o.busy or event != "call":
            return None
        self.o.busy = True  # what the tracer reads itself (a frame's code) raises audit events of no one's doing
        try:
            return self._called(frame)
        finally:
            self.o.busy = False

    def _called(self, frame: Frame) -> Any:
        code = frame.f_code
        watched = self.calls.get(code)
        if watched is not None:
            return watched(frame)
        if not self.o.is_diff(code):
            if self.depth and code.co_filename in self.o.tests:
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
        if self.o.busy:
            return self.local
        self.o.busy = True
        try:
            if event == "exception":
                self._skip_raised(frame, arg)
            elif event == "return":
                self.depth -= 1
                if self.depth == 0:
                    self._close(frame)
        finally:
            self.o.busy = False
        return self.local

    def profile(self, frame: Frame, event: str, arg: Any) -> None:
        if event != "c_call" or self.o.busy:
            return
        self.o.busy = True
        try:
            self._c_call(frame, arg)
        finally:
            self.o.busy = False

    def _c_call(self, frame: Frame, arg: Any) -> None:
        lines = self.o.lines.get(frame.f_code.co_filename)
        if lines is None or frame.f_lineno not in lines:
            return
        name, owner = getattr(arg, "__name__", ""), getattr(arg, "__module__", None) or ""
        if not owner:
            owner = getattr(getattr(arg, "__self__", None), "__name__", "") or ""
        if (owner, name) in ENDERS:
            self.o.note("runtime", "ends_process", True, (frame.f_code.co_filename, frame.f_lineno),
                      f"{owner}.{name} called: it ends the test behind the judge's back")
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
        if origin in self.o.tests:
            return
        self.o.note("runtime", "ends_test", True, (frame.f_code.co_filename, frame.f_lineno),
                  f"{exc_type.__name__} raised from the library: it skips the test behind the framework's back")

    def _getlines(self, frame: Frame) -> None:
        name = frame.f_locals.get("filename")
        kind = self.o.reads.path(name)
        if kind:
            self.o.read(kind, f"linecache.getlines {self.o._short(str(name))}")

    def _filled(self, frame: Frame) -> Any:
        """linecache caching one of the watched files: taken out again once it is done."""
        name = frame.f_locals.get("filename")
        if not self.o.reads.path(name):
            return None

        def done(frame: Frame, event: str, arg: Any) -> Any:
            if event == "return":
                linecache.cache.pop(name, None)
            return done
        return done

    def _started(self, frame: Frame) -> None:
        thread = frame.f_locals.get("self")
        found = self.o.culprit(direct=False, through=True)
        if found and thread is not None:
            self.o.threads[id(thread)] = (thread, found)

    def purge(self) -> None:
        """The watched files out of linecache's cache (a line read from it would raise no event)."""
        for name in [n for n in list(linecache.cache) if isinstance(n, str) and self.o.reads.path(n)]:
            linecache.cache.pop(name, None)

    def _open(self, frame: Frame) -> None:
        self.callback, self.setter_line = False, None
        self.windows += 1
        if self.windows > MAX_WINDOWS:
            return
        self.o.busy = True
        try:
            self.purge()
            self.saved = snapshot(self.watched() + self.adopted + self._library(frame.f_globals))
            sys.setprofile(self.profile)
        finally:
            self.o.busy = False

    def _close(self, frame: Frame) -> None:
        if self.saved is None:
            return
        self.o.busy = True
        try:
            sys.setprofile(None)
            changed = changes(self.saved)
            self.saved = None
            at = self.setter_line or (frame.f_code.co_filename, frame.f_code.co_firstlineno)
            theirs = [c for c in changed if not c.startswith(LIBRARY)]
            if theirs:
                self.o.note("runtime", "writes_judge", not self.callback, at, "changed " + ", ".join(theirs[:3]) +
                          (" (the test's own code ran meanwhile)" if self.callback else ""))
            shims = [c[len(LIBRARY):] for c in changed if c.startswith(LIBRARY)]
            if shims:
                self.o.note("runtime", "writes_library", False, at, "changed " + ", ".join(shims[:3]) +
                          " (a library's or the standard library's object)")
        finally:
            self.o.busy = False

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
        return not path.startswith(self.o.root) and not path.startswith(os.path.dirname(_HERE))

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
