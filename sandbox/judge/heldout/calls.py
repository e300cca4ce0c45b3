"""One repository function called with each of a list of inputs (patcher_heldout.py, mode `call`).

The host sends the function's name and the inputs as plain data (sandbox/plain.py); each call's outcome leaves
as one record: returned (the value as plain data, a generator's first items), raised (the type, its arguments'
repr, whether the traceback passed through the crash site), or timed out. Where the host names lines (the lines
the diff added, in the patched tree), a trace hook notes which of them each call ran, instruction by instruction:
the path through the diff's own lines. A call that replaces the trace hook (an audit event) is marked. With
`alone`, each call runs in a process forked for it after the import: what it answers with nothing left behind by
the calls before it. With `app` (an application's process: patcher_heldout.py), no timer is set.
Standard library only, Python 3.9 and later; loaded from its file, never put in sys.modules.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import select
import signal
import sys
import time
import types
from collections.abc import Callable
from typing import Any

GENERATOR_ITEMS = 100
MAX_PATH = 400


class Overtime(BaseException):
    """One call's time is up (a BaseException: code that catches Exception does not hold it)."""


class Lines:
    """The trace hook: which of the wanted lines (and which instructions on them) a call runs."""

    def __init__(self, root: str, lines: dict[str, list[int]]) -> None:
        self.wanted = {os.path.join(root, rel): (rel, set(ns)) for rel, ns in lines.items()}
        self.hits: set[tuple[str, int, int]] = set()
        self.passed: list[BaseException] = []
        """Exceptions that passed through one of the wanted lines (the first few): where the call's own exception
        is one of them, its path ends there, not by a branch. A generator closed early (`any()` over one) or a
        loop's StopIteration passes too, and is not the call's."""
        self.mine = False
        self.touched = False

    def hook(self, frame: Any, event: str, arg: Any) -> Callable[..., Any] | None:
        return self.local if event == "call" and frame.f_code.co_filename in self.wanted else None

    def local(self, frame: Any, event: str, arg: Any) -> Any:
        rel, wanted = self.wanted[frame.f_code.co_filename]
        line = frame.f_lineno
        if line is None:  # an instruction with no line (Python 3.13 has some)
            return self.local
        if event == "line":
            on = line in wanted
            frame.f_trace_opcodes = on
            if on:
                self.hits.add((rel, line, -1))
        elif event == "opcode":
            self.hits.add((rel, line, frame.f_lasti))
        elif event == "exception" and line in wanted and len(self.passed) < 64:
            self.passed.append(arg[1])
        return self.local

    def audit(self, event: str, args: Any) -> None:
        if event in ("sys.settrace", "sys.setprofile") and not self.mine:
            self.touched = True

    def set(self, hook: Callable[..., Any] | None) -> None:
        self.mine = True
        sys.settrace(hook)
        self.mine = False


def run(job: dict[str, Any], emit: Callable[[dict[str, Any]], None], names: Any, plain: Any) -> None:
    root = job["root"]  # importable as the side's own tree (roots.py, before this runs)
    _preload(job.get("preload") or [])
    lines = Lines(root, job["lines"]) if job.get("lines") else None
    if lines is not None:
        sys.addaudithook(lines.audit)
    try:
        func = names.find(job["target"])
    except BaseException as e:  # the module does not import, or the name leads nowhere: no call is judged
        emit({"k": "target", "ok": False, "why": f"{names.type_name(type(e))}: {_text(e)}"[:300]})
        return
    emit({"k": "target", "ok": True})
    per_call, total = float(job.get("per_call_s") or 2.0), float(job.get("total_s") or 10.0)
    if job.get("app"):
        per_call = 0.0  # no timer, as an application has none: a call that hangs ends the process, and the rest
    else:  # are not answered
        signal.signal(signal.SIGALRM, _alarm)
    site = job.get("site")
    started = time.monotonic()
    for i, call in enumerate(job["calls"]):
        if time.monotonic() - started > total:
            emit({"k": "call", "i": i, "o": {"t": "skipped"}})
            continue
        how = _alone if job.get("alone") else _one
        out = how(func, call, names, plain, lines, per_call, (root, site))
        emit({"k": "call", "i": i, **out})


def _preload(names: list[str]) -> None:
    """The modules the test's process had loaded at the crash (from outside the repository), loaded here too,
    whatever their import does or fails: this process looks like that one to code that asks what is loaded."""
    import importlib

    for name in names:
        if name not in sys.modules:
            with contextlib.suppress(BaseException):
                importlib.import_module(name)


def _alone(func: Any, call: dict[str, Any], names: Any, plain: Any, lines: Lines | None, per_call: float,
           where: tuple[str, Any]) -> dict[str, Any]:
    """One call in a process forked for it: the modules as imported, nothing an earlier call left behind. Its
    answer comes back on a pipe (the parent writes the record); a child that dies or hangs answers nothing."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_fd)
            data = json.dumps(_one(func, call, names, plain, lines, per_call, where), default=repr).encode()
            while data:
                data = data[os.write(write_fd, data):]
        finally:
            os._exit(0)
    os.close(write_fd)
    return collect(read_fd, pid, per_call + 2.0)


def collect(read_fd: int, pid: int, seconds: float) -> dict[str, Any]:
    """A forked call's answer read from its pipe within `seconds` (or why there is none); the child is gone after
    this (here and in the test's own run: inrun.py)."""
    chunks, deadline = [], time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([read_fd], [], [], max(deadline - time.monotonic(), 0.0))
            chunk = os.read(read_fd, 65536) if ready else b""
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(read_fd)
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            os.waitpid(pid, 0)
    try:
        out = json.loads(b"".join(chunks))
    except ValueError:
        return {"o": {"t": "timeout"}} if time.monotonic() >= deadline else {"o": {"bad": "the call's process died"}}
    return out if isinstance(out, dict) else {"o": {"bad": "no answer"}}


def _one(func: Any, call: dict[str, Any], names: Any, plain: Any, lines: Lines | None, per_call: float,
         where: tuple[str, Any]) -> dict[str, Any]:
    try:
        pos = [plain.decode(e, names.resolve) for e in call["pos"]]
        kw = {str(k): plain.decode(e, names.resolve) for k, e in call["kw"]}
    except BaseException as e:  # a class that cannot be rebuilt so: this input is not judged
        return {"o": {"bad": f"{names.type_name(type(e))}: {_text(e)}"[:200]}}
    if lines is not None:
        lines.hits, lines.touched, lines.passed = set(), False, []
        lines.set(lines.hook)
    if per_call:
        signal.setitimer(signal.ITIMER_REAL, per_call)
    raised_in = False
    try:
        out = _answer(func, pos, kw, plain)
    except Overtime:
        out = {"t": "timeout"}
    except BaseException as e:
        out = {"x": names.type_name(type(e)), "site": _through(e.__traceback__, *where), "args": _args(e),
               "msg": _text(e)[:200]}
        raised_in = lines is not None and any(x is e for x in lines.passed)
    finally:
        if per_call:
            signal.setitimer(signal.ITIMER_REAL, 0)
        if lines is not None:
            lines.set(None)
    result: dict[str, Any] = {"o": out}
    if lines is not None:
        result["p"] = sorted(lines.hits)[:MAX_PATH]
        lines.passed = []
        if raised_in:
            result["rx"] = True
        if lines.touched:
            result["traced"] = False
    return result


def _answer(func: Any, pos: list[Any], kw: dict[str, Any], plain: Any) -> dict[str, Any]:
    value = func(*pos, **kw)
    if isinstance(value, types.GeneratorType):
        return {"r": plain.encode(list(itertools.islice(value, GENERATOR_ITEMS))), "gen": True}
    return {"r": plain.encode(value)}


def _through(tb: Any, root: str, site: Any) -> bool:
    """Whether the traceback passed through the crash site (file, and function unless the traceback named none or
    a comprehension, which newer Pythons inline into the function around it)."""
    if not site:
        return True  # no crash site is known (no traceback was given): every raise passes the one there is
    prefix = root.rstrip("/") + "/"
    any_function = str(site[1]) in ("", "?") or str(site[1]).startswith("<")
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_filename == prefix + site[0] and (any_function or code.co_name == site[1]):
            return True
        tb = tb.tb_next
    return False


def _args(e: BaseException) -> str:
    try:
        return repr(e.args)[:200]
    except Exception:  # a repr of the repository's that raises
        return "?"


def _text(e: BaseException) -> str:
    try:
        return str(e)
    except Exception:
        return "?"


def _alarm(signum: int, frame: Any) -> None:
    raise Overtime()
