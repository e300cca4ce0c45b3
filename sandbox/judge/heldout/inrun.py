"""Held-out inputs asked inside the test's own run (the harness's channel loads this file when the host sends a
held-out job with the run's key: harness/patcher_channel.py).

The test runs as every verification run does: the tool server's runner, the harness, its environment, limits,
working directory and tree. A trace hook that answers only 'call' events waits for the tested call, the call of
the target's code (its file, first line and name) whose arguments are the recorded ones (or, its other arguments
alike, the one met as many calls in as the recording's, where the diff changed an instance it is handed). There,
before the function's first line runs, the process forks once for each input. The child puts the input's values in
place of the call's arguments (an entry the host left opaque stays the live object the test passed; an instance
the host varied is made again through its class's `__init__`, or else copied from the test's, with its attributes
set: built.py), lets the function run from the test's own call site, and answers
what it returned or raised (with, where the host names the diff's lines, which of them it ran) on a pipe of its
own; then it ends. The parent writes each answer as a signed record, stops tracing, and lets the test's own call
run untouched: the test's outcome is the harness's, as ever. Input 0 is the tested call itself (every argument the
live object): what the child answers there is what the test's own call answers, unless the code tells the two
apart. Standard library only; Python 3.9 to 3.13; loaded from its file, never put in sys.modules.
"""

from __future__ import annotations

import dis
import itertools
import json
import os
import sys
import threading
import time
import types
from collections.abc import Callable
from typing import Any

CO_VARARGS, CO_VARKEYWORDS, CO_GENERATOR = 0x04, 0x08, 0x20
BUDGET = 400
"""As the recording (record.py): the tested call is met by its arguments encoded alike."""
GENERATOR_ITEMS = 100
MAX_PATH = 400


def install(job: dict[str, Any], emit: Callable[[dict[str, Any]], None], load: Callable[[str], Any],
            channel_fd: int = -1) -> Asker:
    """The asker of this process, its hook set (for the process and its threads) as the test's call begins: the
    harness's plugin calls `rearm` there, as the recording starts there (record.py), so that a call of the target
    made while the test module is imported or a fixture is set up is never taken for the tested one, and calls are
    counted as the recording counts them; `load` gives a module of sandbox/ by its path there; `channel_fd`: the
    harness's record fd, which no child may write."""
    asker = Asker(job, emit, load("plain.py"), load("judge/heldout/names.py"), load("judge/heldout/calls.py"))
    asker.built = load("judge/heldout/built.py")
    asker.channel_fd = channel_fd
    return asker


class Asker:
    def __init__(self, job: dict[str, Any], emit: Callable[[dict[str, Any]], None], plain: Any, names: Any,
                 calls: Any) -> None:
        self.job, self.emit, self.plain, self.names, self.calls = job, emit, plain, names, calls
        self.root = str(job["root"]).rstrip("/")
        target = job["target"]
        self.where = (os.path.join(self.root, target["file"]), int(target["first"]), str(target["func"]))
        self.done = self.other = False
        self.channel_fd = -1
        self.built: Any = None
        self.met = 0
        """Calls of the target's code so far: the recorded count before the tested call (`n`) meets it where the
        diff changed an instance it is handed (an attribute added or set otherwise), its other arguments alike."""

    def rearm(self) -> None:
        """The hook set as each test's call begins (the harness's plugin, patcher_evidence.py), again where another
        tracer took its place (coverage's, started with the session)."""
        if not self.done and sys.gettrace() is not self.hook:
            sys.settrace(self.hook)
            threading.settrace(self.hook)

    def hook(self, frame: Any, event: str, arg: Any) -> Any:
        if self.done or event != "call":
            return None
        try:
            return self._hook(frame)
        except Exception as e:  # the judge's own fault must not reach the test: it stops asking, and says why
            self.done = True
            sys.settrace(None)
            threading.settrace(None)  # type: ignore[arg-type]
            self.emit({"k": "inrun", "ok": False, "why": f"{type(e).__name__}: {e}"[:200]})
            return None

    def _hook(self, frame: Any) -> Any:
        code = frame.f_code
        if (code.co_filename, code.co_firstlineno, code.co_name) != self.where:
            return None
        call = self.encoded(_call(code, dict(frame.f_locals)))
        self.met += 1
        if not _alike(call, self.job["call"]) and not (self.met - 1 == self.job.get("n")
                                                       and _alike(call, self.job["call"], loose=True)):
            if not self.other:  # the first other call, shown where the tested one is never met
                self.other = True
                self.emit({"k": "inrun_other", "call": call})
            return None  # another call of the function: the tested one has the recorded arguments
        self.done = True
        self.emit({"k": "inrun", "ok": True, "call": call})
        child = self.ask(frame)
        if child is None:  # the parent: the test's own call, and the rest of the test, untraced
            sys.settrace(None)
            threading.settrace(None)  # type: ignore[arg-type]
        return child

    def ask(self, frame: Any) -> Callable[..., Any] | None:
        """Each input in a child forked here (the child returns its frame's tracer); None in the parent."""
        live = dict(frame.f_locals)
        per_call, total = float(self.job.get("per_call_s") or 2.0), float(self.job.get("total_s") or 10.0)
        started = time.monotonic()
        for i, given in enumerate(self.job["inputs"]):
            if time.monotonic() - started > total:
                self.emit({"k": "call", "i": i, "o": {"t": "skipped"}})
                continue
            read_fd, write_fd = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(read_fd)
                return Child(self, frame, given, live, write_fd).start()
            os.close(write_fd)
            self.emit({"k": "call", "i": i, **self.calls.collect(read_fd, pid, per_call)})
        return None


    def encoded(self, call: dict[str, Any]) -> dict[str, Any]:
        enc = self.plain.encode
        return {"pos": [enc(v, budget=BUDGET) for v in call["pos"]], "kw": [[k, enc(v, budget=BUDGET)]
                                                                           for k, v in call["kw"]]}


def _alike(a: Any, b: Any, loose: bool = False) -> bool:
    """Whether two encodings are of the same call: equal, what is opaque compared by its type only, and dates and
    times by their kind (a test that hands the function the time of its run); `loose`: instances by class only."""
    if isinstance(a, list) and isinstance(b, list):
        if a[:1] == b[:1] and a[:1] in (["?"], ["dtm"], ["date"], ["tm"]):
            return a[:1] != ["?"] or a[1:2] == b[1:2]
        if loose and a[:1] == b[:1] == ["o"]:
            return a[1:2] == b[1:2]
        return len(a) == len(b) and all(_alike(x, y, loose) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_alike(a[k], b[k], loose) for k in a)
    return bool(a == b)


class Child:
    """One input, in the process forked for it: its values put in place, the function run from the test's call
    site, its answer written to the pipe when the frame returns or raises out."""

    def __init__(self, asker: Asker, frame: Any, given: dict[str, Any], live: dict[str, Any], fd: int) -> None:
        self.asker, self.frame, self.given, self.live, self.fd = asker, frame, given, live, fd
        self.exc: BaseException | None = None
        self.tb: Any = None
        self.items: list[Any] | None = [] if frame.f_code.co_flags & CO_GENERATOR else None
        """A generator's items so far (each yield is a 'return' event of its frame)."""
        wanted = asker.job.get("lines") or {}
        self.lines = asker.calls.Lines(asker.root, wanted) if wanted else None

    def start(self) -> Callable[..., Any]:
        with _quiet():
            os.close(self.asker.channel_fd)  # a child that outlives its frame must never write the test's records
        with _quiet():
            quiet = os.open(os.devnull, os.O_WRONLY)  # nor its output: pytest captures the test's own fds
            os.dup2(quiet, 1)
            os.dup2(quiet, 2)
        with _quiet(), open("/proc/self/oom_score_adj", "w") as f:
            f.write("1000")  # as the runner sets it for the test: a drawn size that eats memory ends this child
        threading.settrace(None)  # type: ignore[arg-type]
        try:
            if not self.given.get("live"):
                _set_locals(self.frame, self._values())
        except BaseException as e:  # an input this call cannot take: no answer of the function's
            self._send({"o": {"bad": f"{type(e).__name__}: {e}"[:200]}})
        sys.settrace(self.hook)
        self.frame.f_trace_lines = True
        return self.local

    def hook(self, frame: Any, event: str, arg: Any) -> Any:
        """The child's global hook: its frame again on each resume (a generator's), else the diff's lines."""
        if frame is self.frame:
            return self.local
        return self.lines.hook(frame, event, arg) if self.lines is not None else None

    def _values(self) -> dict[str, Any]:
        code, plain, resolve = self.frame.f_code, self.asker.plain, self.asker.names.resolve
        was = _by_name(code, self.asker.job["call"])
        built = self.asker.built
        out, copies = {}, []
        for name, enc in _by_name(code, self.given).items():
            live = self.live.get(name)
            if isinstance(enc, list) and enc[:1] == ["="]:  # the live object made again, equal (built.again)
                out[name] = built.again(live, plain.encode, self.frame.f_globals)
                copies.append(out[name] is not live)
            else:
                out[name] = built.value(enc, live, was.get(name), plain, resolve)
        if copies and not any(copies):
            raise ValueError("no argument could be made again as an equal copy")
        return out

    def local(self, frame: Any, event: str, arg: Any) -> Any:
        if self.lines is not None and frame.f_code.co_filename in self.lines.wanted:
            self.lines.local(frame, event, arg)
        if event == "line":
            self.exc = None  # an exception caught inside the function: it goes on
        elif event == "exception":
            self.exc, self.tb = arg[1], arg[2]  # the exception's own __traceback__ is set only where it is caught
        elif event == "return":
            if self.items is not None and self.exc is None and _yielding(frame):
                self.items.append(self.asker.plain.encode(arg, budget=BUDGET))
                if len(self.items) < GENERATOR_ITEMS:
                    return self.local  # the consumer (the test's own code) asks for the next one
                arg = None
            self._send(self._answer(arg))
        return self.local

    def _answer(self, value: Any) -> dict[str, Any]:
        calls, names, root = self.asker.calls, self.asker.names, self.asker.root
        if self.exc is not None:
            e = self.exc
            out: dict[str, Any] = {"x": names.type_name(type(e)), "site": calls._through(
                self.tb, root, self.asker.job.get("site")), "args": calls._args(e), "msg": calls._text(e)[:200]}
        elif self.items is not None:
            out = {"r": ["l", self.items], "gen": True}
        elif isinstance(value, types.GeneratorType):
            out = {"r": self.asker.plain.encode(list(itertools.islice(value, GENERATOR_ITEMS))), "gen": True}
        else:
            out = {"r": self.asker.plain.encode(value)}
        result: dict[str, Any] = {"o": out}
        if self.lines is not None:
            result["p"] = sorted(self.lines.hits)[:MAX_PATH]
            if self.exc is not None and any(x is self.exc for x in self.lines.passed):
                result["rx"] = True
        return result

    def _send(self, out: dict[str, Any]) -> None:
        sys.settrace(None)
        data = json.dumps(out, default=repr).encode()
        with _quiet():
            while data:
                data = data[os.write(self.fd, data):]
        os._exit(0)


def _yielding(frame: Any) -> bool:
    """Whether a generator's frame, at a 'return' event, is yielding (not returning for good)."""
    code = frame.f_code.co_code
    return 0 <= frame.f_lasti < len(code) and dis.opname[code[frame.f_lasti]] == "YIELD_VALUE"


def _call(code: Any, local: dict[str, Any]) -> dict[str, Any]:
    """The call's arguments by the function's own parameters: {"pos": [...], "kw": [[name, value], ...]} with every
    positional parameter (self too), then the extra positional ones; the keyword-only ones and extra keywords."""
    names, n_pos, n_kw = code.co_varnames, code.co_argcount, code.co_kwonlyargcount
    pos = [local.get(n) for n in names[:n_pos]]
    kw = [[n, local.get(n)] for n in names[n_pos:n_pos + n_kw]]
    at = n_pos + n_kw
    if code.co_flags & CO_VARARGS:
        pos += list(local.get(names[at]) or ())
        at += 1
    if code.co_flags & CO_VARKEYWORDS:
        kw += [[str(k), v] for k, v in (local.get(names[at]) or {}).items()]
    return {"pos": pos, "kw": kw}


def _by_name(code: Any, given: dict[str, Any]) -> dict[str, Any]:
    """An input's values ({"pos", "kw"}, as `_call` lays them out, encoded) by the local each one goes to."""
    names, n_pos, n_kw = code.co_varnames, code.co_argcount, code.co_kwonlyargcount
    pos, kw = list(given.get("pos") or []), [(str(k), e) for k, e in given.get("kw") or []]
    out: dict[str, Any] = dict(zip(names[:n_pos], pos))
    own_kw = set(names[n_pos:n_pos + n_kw])
    out.update((k, e) for k, e in kw if k in own_kw)
    at = n_pos + n_kw
    if code.co_flags & CO_VARARGS:
        out[names[at]] = ["t", pos[n_pos:]]
        at += 1
    if code.co_flags & CO_VARKEYWORDS:
        out[names[at]] = ["d", [[["s", k], e] for k, e in kw if k not in own_kw]]
    return out


def _set_locals(frame: Any, values: dict[str, Any]) -> None:
    """The frame's arguments replaced before its first line runs (Python 3.13 writes through f_locals; before it,
    the dict is written back with PyFrame_LocalsToFast)."""
    if sys.version_info >= (3, 13):
        for name, value in values.items():
            frame.f_locals[name] = value
        return
    import ctypes

    local = frame.f_locals
    local.update(values)
    ctypes.pythonapi.PyFrame_LocalsToFast(ctypes.py_object(frame), ctypes.c_int(0))


class _quiet:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> bool:
        return exc[0] is not None and issubclass(exc[0], Exception)
